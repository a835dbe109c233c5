//! `qlog-cr`: look at Careful Resume in quiche qlog traces.
//!
//! ```text
//! qlog-cr plot TRACE... -o FILE.svg   one panel per trace, shared scales
//! qlog-cr summary TRACE... [--json]   phases, window, losses, completion
//! ```

use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use clap::Subcommand;
use qlog_cr::Trace;

/// Look at IETF Careful Resume in quiche qlog traces (.sqlog, JSON-SEQ).
#[derive(Parser)]
#[command(name = "qlog-cr", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Draw traces to an SVG file: one panel per trace on shared time and
    /// window scales.
    Plot {
        /// The traces, drawn top to bottom in this order.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// The SVG file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print the Careful Resume phases, largest window, losses and
    /// completion time of each trace.
    Summary {
        /// The traces to summarise.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// Print one JSON object per trace and line (schema in the crate
        /// documentation) instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("qlog-cr: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Plot { traces, output } => {
            let traces = read_all(&traces)?;
            qlog_cr::plot(&traces, &output).map_err(|e| format!("{}: {e}", output.display()))
        }
        Command::Summary { traces, json } => {
            for (i, trace) in read_all(&traces)?.iter().enumerate() {
                let summary = trace.summary();
                if json {
                    let line = serde_json::to_string(&summary).map_err(|e| e.to_string())?;
                    println!("{line}");
                } else {
                    if i > 0 {
                        println!();
                    }
                    println!("{summary}");
                }
            }
            Ok(())
        }
    }
}

fn read_all(paths: &[PathBuf]) -> Result<Vec<Trace>, String> {
    paths.iter().map(|p| read(p)).collect()
}

fn read(path: &Path) -> Result<Trace, String> {
    Trace::from_path(path).map_err(|e| format!("{}: {e}", path.display()))
}
