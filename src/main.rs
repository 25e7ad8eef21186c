use anyhow::Context;
use clap::Parser;
use profiler::cli::{Cli, Command};
use profiler::harness::{fleet, signals, sweep, validate};
use profiler::matrix::{load_matrix, render_cells, render_demands, render_summary};
use profiler::output::grid_progress::GridProgress;
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

/// `profiler sweep --slurm` (submits and follows the jobs) and the jobs' own `--slurm-step-cpu`.
fn slurm_sweep(args: profiler::cli::SweepArgs) -> anyhow::Result<ExitCode> {
    let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
    if let Some(step) = args.slurm_step() {
        let spec = profiler::spec::load_spec(&args.job)?;
        let opts = args.into_options(spec);
        let mut lines = fleet::PrefixedLines {
            prefix: format!("{} on {}", opts.spec.spec.name, step.node),
        };
        let outcome = sweep::run_sweep_in_slurm_step(&opts, &step, &mut lines, &cancel)?;
        println!("wrote {}", outcome.path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let slurm = args
        .slurm_options()
        .context("locating the profiler binary")?;
    let specs = fleet::expand_specs(&args.job)?;
    if specs.len() > 1 && args.output.as_ref().is_some_and(|o| !o.is_dir()) {
        anyhow::bail!("with several specs, --output must be an existing directory");
    }
    let sweeps = specs
        .iter()
        .map(|p| Ok(args.clone().into_options(profiler::spec::load_spec(p)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let results = fleet::run_fleet_sweeps(&sweeps, &slurm, &cancel);
    let (mut failed, mut interrupted) = (false, false);
    for (opts, result) in sweeps.iter().zip(results) {
        let name = &opts.spec.spec.name;
        match result {
            Ok(outcome) => {
                print!("{}", render_summary(&outcome.matrix));
                println!(
                    "wrote {} ({} Slurm job(s), {:.1} s)",
                    outcome.path.display(),
                    outcome.launches,
                    outcome.wall_s
                );
            }
            Err(e @ sweep::SweepError::Interrupted { .. }) => {
                eprintln!("{name}: {e}");
                interrupted = true;
            }
            Err(e) => {
                eprintln!("error: {name}: {e}");
                failed = true;
            }
        }
    }
    Ok(if interrupted {
        ExitCode::from(130)
    } else if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Sweep(args) if args.slurm || args.slurm_step_cpu.is_some() => slurm_sweep(args),
        Command::Sweep(args) => {
            if fleet::expand_specs(&args.job)?.len() > 1 {
                anyhow::bail!(
                    "--job {}: several specs are profiled at once only through Slurm (--slurm)",
                    args.job.display()
                );
            }
            if let Some(why) = fleet::inside_slurm_job().filter(|_| !args.no_caps) {
                anyhow::bail!(why);
            }
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
                        let path = outcome.path.display();
                        println!(
                            "wrote {path} ({} launch{}, {:.1} s)",
                            outcome.launches,
                            if outcome.launches == 1 { "" } else { "es" },
                            outcome.wall_s
                        );
                        println!(
                            "next: profiler show {path} --demand    (best-case CPU and memory)\n      \
                             profiler plot {path}             (sensitivity curves into plots/)\n      \
                             profiler export {path} --format csv|parquet|json|synergy|blox|gavel|slurm|kubernetes"
                        );
                    } else {
                        match outcome.uncapped_verdict() {
                            Ok(verdict) => println!("{verdict}"),
                            Err(reason) => {
                                eprintln!("{reason}");
                                return Ok(ExitCode::FAILURE);
                            }
                        }
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
        Command::Validate(args) => {
            let spec = profiler::spec::load_spec(&args.job)?;
            let (opts, record_in) = args.into_options(spec);
            let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
            let mut progress = SweepProgress::new();
            let result = validate::run_validate(&opts, &record_in, &mut progress, &cancel);
            progress.finish();
            match result {
                Ok(outcome) => {
                    let h = &outcome.matrix.header;
                    let validation = h.validation.as_ref().context("validation recorded")?;
                    let chosen = h.cache_model.as_ref().map(|c| c.kind);
                    print!("{}", validate::render(validation, chosen));
                    println!("recorded in {}", outcome.path.display());
                    for p in &outcome.also_recorded_in {
                        println!("recorded in {}", p.display());
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(validate::ValidateError::Sweep(e @ sweep::SweepError::Interrupted { .. })) => {
                    eprintln!("{e}");
                    Ok(ExitCode::from(130))
                }
                Err(e) => Err(e.into()),
            }
        }
        Command::Plot(args) => {
            let written =
                profiler::plot::sensitivity::plot_files(&args.matrices, &args.to_options())?;
            for p in &written {
                println!("wrote {}", p.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay(args) if args.is_elastic() => {
            let experiment = profiler::replay::run_elastic(&args.to_elastic()?)?;
            print!(
                "{}",
                profiler::replay::elastic::experiment::render(&experiment)
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay(args) if args.grid.grid.is_some() => {
            let progress = GridProgress::new();
            let out = profiler::replay::grid::cli::run(
                &args.grid,
                args.out.as_deref(),
                &progress,
                &mut |line| eprintln!("{line}"),
            );
            progress.finish();
            match out {
                Err(e @ profiler::replay::grid::GridError::Interrupted(_)) => {
                    eprintln!("{e}");
                    Ok(ExitCode::from(130))
                }
                out => {
                    print!("{}", out?);
                    Ok(ExitCode::SUCCESS)
                }
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
        Command::Deploy(args) => {
            let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
            let progress = profiler::output::deploy_progress::DeployLines::new();
            match profiler::deploy::run_deploy(&args.to_options()?, &progress, &cancel) {
                Err(e @ profiler::deploy::DeployError::Interrupted { .. }) => {
                    eprintln!("{e}");
                    Ok(ExitCode::from(130))
                }
                out => {
                    let summary = out?;
                    print!(
                        "{}",
                        profiler::deploy::compare::render(&profiler::deploy::compare::rows(
                            &summary.deployed,
                            &summary.replayed
                        ))
                    );
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
        Command::Export(args) => {
            let report = profiler::export::export(&args.into_options(), &mut std::io::stdout())?;
            for note in &report.notes {
                eprintln!("note: {note}");
            }
            for path in &report.written {
                eprintln!("wrote {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor(args) => {
            let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
            let opts = args.to_options();
            let mut progress = SweepProgress::new();
            let report = profiler::doctor::run_doctor(
                &opts,
                &profiler::doctor::NvmlInventory,
                &mut progress,
                &cancel,
            );
            progress.finish();
            print!("{}", profiler::doctor::render(&report));
            Ok(if report.failed() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
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
            if args.demand {
                let d = &args.demand_args;
                print!(
                    "{}",
                    render_demands(&matrix, &d.server, d.eps, d.weights())
                        .with_context(|| args.file.display().to_string())?
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
