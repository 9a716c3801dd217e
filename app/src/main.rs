//! `texset`: the studio (no arguments, or `texset studio DIR...`) and the command line of the
//! texset engine. Thin: the work is in texset-core, texset-shaders and the studio module; the
//! subcommands are in `cli/`, one module each.

mod cli;

use clap::Parser as _;

fn main() {
    let cli = cli::Cli::parse();
    if let Err(e) = cli::run(cli) {
        eprintln!("texset: error: {e:#}");
        std::process::exit(1);
    }
}
