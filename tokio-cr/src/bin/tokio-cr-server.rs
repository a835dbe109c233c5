//! `tokio-cr-server`: tokio-quiche's HTTP/3 driver serving `GET /<bytes>`
//! (that many bytes), with Careful Resume around it: one line per
//! connection on standard output saying what Careful Resume did
//! ([`tokio_cr::program`]).
//!
//! ```sh
//! cargo run -p tokio-cr --bin tokio-cr-server -- --listen 127.0.0.1:4433
//! ```

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    tokio_cr::program::main(tokio_cr::program::Args::parse())
}
