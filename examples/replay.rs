//! Temporary driver for `profiler replay` until the lead wires it into `main.rs`:
//! `cargo run --release --example replay -- --help`.

use clap::Parser;
use profiler::replay::cli::ReplayArgs;

#[derive(Parser)]
#[command(name = "profiler replay")]
struct Cli {
    #[command(flatten)]
    args: ReplayArgs,
}

fn main() {
    let cli = Cli::parse();
    let result = cli
        .args
        .to_options()
        .and_then(|o| profiler::replay::run(&o));
    match result {
        Ok(summary) => print!("{}", profiler::replay::report::render(&summary)),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
