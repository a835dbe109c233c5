//! One bulk transfer of the `transfer` benchmark, for counting instructions:
//!
//! ```sh
//! cargo build --release -p quiche-cr-benches --example transfer_instructions
//! valgrind --tool=cachegrind --cache-sim=no \
//!     target/release/examples/transfer_instructions no_saved_set
//! ```
//!
//! Instruction counts repeat exactly from run to run, so the per-packet cost
//! of Careful Resume can be compared to well under the 2% that wall-time
//! measurements on a shared machine cannot resolve.

use quiche_cr_benches::{transfer, variants, TRANSFER};

fn main() {
    let wanted = std::env::args().nth(1).unwrap_or_default();
    let Some((name, saved)) = variants().into_iter().find(|(name, _)| *name == wanted) else {
        let names: Vec<_> = variants().iter().map(|(name, _)| *name).collect();
        eprintln!("usage: transfer_instructions {}", names.join("|"));
        std::process::exit(2);
    };
    let packets = transfer(saved, &vec![0x5a; TRANSFER]);
    println!("{name}: {packets} packets");
}
