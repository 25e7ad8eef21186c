use anyhow::Context;
use clap::Parser;
use profiler::cli::{Cli, Command};
use profiler::harness::{signals, sweep};
use profiler::matrix::{load_matrix, render_cells, render_summary};
use profiler::output::progress::SweepProgress;
use profiler::output::replay_progress::ReplayProgress;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Sweep(args) => {
            let spec = profiler::spec::load_spec(&args.job)?;
            let opts = args.into_options(spec);
            let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
            let mut progress = SweepProgress::new();
            let result = sweep::run_sweep(&opts, &mut progress, &cancel);
            progress.finish();
            match result {
                Ok(outcome) => {
                    print!("{}", render_summary(&outcome.matrix));
                    if opts.caps {
                        println!(
                            "wrote {} ({} launch{}, {:.1} s)",
                            outcome.path.display(),
                            outcome.launches,
                            if outcome.launches == 1 { "" } else { "es" },
                            outcome.wall_s
                        );
                    } else {
                        println!(
                            "--no-caps: the spec runs and reports progress; no matrix written"
                        );
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(e @ sweep::SweepError::Interrupted { .. }) => {
                    eprintln!("{e}");
                    Ok(ExitCode::from(130))
                }
                Err(e) => Err(e.into()),
            }
        }
        Command::Replay(args) => {
            let progress = ReplayProgress::new();
            let summary = profiler::replay::run_observed(&args.to_options()?, &progress);
            progress.finish();
            let summary = summary?;
            print!("{}", profiler::replay::report::render(&summary));
            Ok(ExitCode::SUCCESS)
        }
        Command::Show(args) => {
            let matrix = load_matrix(&args.file)?;
            if args.json {
                for cell in &matrix.cells {
                    println!("{}", serde_json::to_string(cell)?);
                }
            } else if args.cells {
                print!("{}", render_cells(&matrix));
            } else {
                print!("{}", render_summary(&matrix));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
