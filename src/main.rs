#![warn(clippy::too_many_lines)]

use anyhow::Context;
use clap::Parser;
use profiler::cli::{Cli, Command};
use profiler::harness::process::signals;
use profiler::harness::sweep::{self, fleet};
use profiler::harness::validate;
use profiler::matrix::{load_matrix, render_brief, render_cells, render_demands, render_summary};
use profiler::output::grid_progress::GridProgress;
use profiler::output::progress::SweepProgress;
use profiler::output::replay_progress::ReplayProgress;
use std::process::ExitCode;

fn main() -> ExitCode {
    let outcome = run(Cli::parse());
    exit_code(outcome)
}

/// The one place a command's outcome becomes the exit status: 130 where Ctrl-C or SIGTERM
/// interrupted it (after what it kept is said), 1 on an error.
fn exit_code(outcome: anyhow::Result<ExitCode>) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(e) if interrupted(&e) => {
            eprintln!("{e:#}");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `e` says Ctrl-C or SIGTERM stopped the command.
fn interrupted(e: &anyhow::Error) -> bool {
    use profiler::deploy::DeployError;
    use profiler::replay::grid::GridError;
    use sweep::SweepError;
    use validate::ValidateError;
    e.downcast_ref::<SweepError>()
        .is_some_and(|e| matches!(e, SweepError::Interrupted { .. }))
        || e.downcast_ref::<ValidateError>()
            .is_some_and(|e| matches!(e, ValidateError::Sweep(SweepError::Interrupted { .. })))
        || e.downcast_ref::<GridError>()
            .is_some_and(|e| matches!(e, GridError::Interrupted(_)))
        || e.downcast_ref::<DeployError>()
            .is_some_and(DeployError::interrupted)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Sweep(args) if args.slurm || args.slurm_step_cpu.is_some() => slurm_sweep(args),
        Command::Sweep(args) => local_sweep(args),
        Command::Validate(args) => run_validate(args),
        Command::Plot(args) => plot(args),
        Command::Report(args) => report(args),
        Command::Replay(args) if args.is_elastic() => replay_elastic(&args),
        Command::Replay(args) if args.grid.grid.is_some() => replay_grid(&args),
        Command::Replay(args) => replay(&args),
        Command::Deploy(args) => deploy(args),
        Command::Colocate(args) => colocate(&args),
        Command::Export(args) => export(args),
        Command::Doctor(args) => doctor(args),
        Command::Show(args) => show(args),
        Command::Corpus(args) => corpus(args),
        Command::Predict(args) => predict(&args),
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

fn local_sweep(args: profiler::cli::SweepArgs) -> anyhow::Result<ExitCode> {
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
    let (verbose, library) = (args.verbose, args.library.clone());
    let opts = args.into_options(spec);
    let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
    let mut progress = SweepProgress::with_verbosity(verbose);
    let result = sweep::run_sweep(&opts, &mut progress, &cancel);
    progress.finish();
    let outcome = result?;
    match verbose {
        true => print!("{}", render_summary(&outcome.matrix)),
        false => print!(
            "{}",
            render_brief(&outcome.matrix, opts.spec.spec.measure.precision)
        ),
    }
    if !opts.caps {
        return match outcome.uncapped_verdict() {
            Ok(verdict) => {
                println!("{verdict}");
                Ok(ExitCode::SUCCESS)
            }
            Err(reason) => {
                eprintln!("{reason}");
                Ok(ExitCode::FAILURE)
            }
        };
    }
    let predicted = (outcome.matrix.cells.iter())
        .filter(|c| c.source == profiler::matrix::CellSource::Predicted)
        .count();
    match &library {
        Some(dir) if predicted > 0 => eprintln!(
            "not added to the library {}: {predicted} cell(s) were predicted, not measured",
            dir.display()
        ),
        Some(dir) => {
            let filed = profiler::predict::add_to_library(&outcome.path, &outcome.matrix, dir)?;
            eprintln!("added to the library: {}", filed.display());
        }
        None => {}
    }
    let path = outcome.path.display();
    println!(
        "wrote {path} ({} launch{}, {:.1} s)",
        outcome.launches,
        if outcome.launches == 1 { "" } else { "es" },
        outcome.wall_s
    );
    println!(
        "next: profiler report {path}           (a page: charts with intervals, each cell's story)\n      \
         profiler show {path} --demand    (best-case CPU and memory)\n      \
         profiler plot {path}             (sensitivity curves into plots/)\n      \
         profiler export {path} --format csv|parquet|json|synergy|blox|gavel|slurm|kubernetes"
    );
    Ok(ExitCode::SUCCESS)
}

fn run_validate(args: profiler::cli::ValidateArgs) -> anyhow::Result<ExitCode> {
    let spec = profiler::spec::load_spec(&args.job)?;
    let (opts, record_in) = args.into_options(spec);
    let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
    let mut progress = SweepProgress::new();
    let result = validate::run_validate(&opts, &record_in, &mut progress, &cancel);
    progress.finish();
    let outcome = result?;
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

fn plot(args: profiler::cli::PlotArgs) -> anyhow::Result<ExitCode> {
    let written = profiler::plot::sensitivity::plot_files(&args.matrices, &args.to_options())?;
    for p in &written {
        println!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn report(args: profiler::cli::ReportArgs) -> anyhow::Result<ExitCode> {
    let opts = args.to_options();
    let written = profiler::report::write_report(&args.matrices, &opts, &mut |k, n| {
        if n > 20 && (k % 100 == 0 || k == n) {
            eprintln!("report: {k}/{n} pages");
        }
    })?;
    match written.first() {
        Some(first) => println!("open {}", first.display()),
        None => println!("no page written"),
    }
    if written.len() > 1 {
        println!("{} pages in {}", written.len() - 1, opts.out_dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn replay_elastic(args: &profiler::cli::replay::ReplayArgs) -> anyhow::Result<ExitCode> {
    let experiment = profiler::replay::run_elastic(&args.to_elastic()?)?;
    print!(
        "{}",
        profiler::replay::elastic::experiment::render(&experiment)
    );
    Ok(ExitCode::SUCCESS)
}

fn replay_grid(args: &profiler::cli::replay::ReplayArgs) -> anyhow::Result<ExitCode> {
    let progress = GridProgress::new();
    let out = profiler::cli::grid::run(&args.grid, args.out.as_deref(), &progress, &mut |line| {
        eprintln!("{line}")
    });
    progress.finish();
    print!("{}", out?);
    Ok(ExitCode::SUCCESS)
}

fn replay(args: &profiler::cli::replay::ReplayArgs) -> anyhow::Result<ExitCode> {
    let progress = ReplayProgress::new();
    let summary = profiler::replay::run_observed(&args.to_options()?, &progress);
    progress.finish();
    print!("{}", profiler::replay::report::render(&summary?));
    Ok(ExitCode::SUCCESS)
}

fn deploy(args: profiler::cli::deploy::DeployArgs) -> anyhow::Result<ExitCode> {
    use profiler::deploy::compare;
    let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
    let progress = profiler::output::deploy_progress::DeployLines::new();
    let summary = profiler::deploy::run_deploy(&args.to_options()?, &progress, &cancel)?;
    let rows = summary.compare_rows();
    print!("{}", compare::render(&rows));
    print!(
        "{}",
        profiler::replay::report::render_verdicts(&summary.replayed.verdicts)
    );
    if summary.of_deploy.iter().any(Option::is_some) {
        print!(
            "{}",
            profiler::deploy::replay_of_deploy::render_ratios(&summary.of_deploy)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn colocate(args: &profiler::cli::colocate::ColocateArgs) -> anyhow::Result<ExitCode> {
    let opts = args.to_options().map_err(anyhow::Error::msg)?;
    let cancel = signals::install_cancel_flag().context("installing signal handlers")?;
    let found =
        profiler::deploy::colocation::run_local(&opts, &cancel, &mut |line| eprintln!("{line}"))?;
    for c in &found {
        println!("{}", c.describe());
    }
    eprintln!("wrote {}", opts.out_dir.join("colocation.txt").display());
    Ok(ExitCode::SUCCESS)
}

fn export(args: profiler::cli::export::ExportArgs) -> anyhow::Result<ExitCode> {
    let report = profiler::export::export(&args.into_options(), &mut std::io::stdout())?;
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    for path in &report.written {
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn doctor(args: profiler::cli::DoctorArgs) -> anyhow::Result<ExitCode> {
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

fn corpus(args: profiler::cli::CorpusArgs) -> anyhow::Result<ExitCode> {
    use profiler::matrix::cell_model::corpus;
    let judged = corpus::judge(&corpus::load(&args.paths)?, args.precision);
    if judged.is_empty() {
        anyhow::bail!("no job has two sweeps or more in {:?}", args.paths);
    }
    for j in judged {
        println!("{}", j.describe(args.precision));
    }
    Ok(ExitCode::SUCCESS)
}

fn predict(args: &profiler::cli::predict::PredictArgs) -> anyhow::Result<ExitCode> {
    use profiler::predict::{Library, SETTINGS, evaluate, predict_matrix};
    let mut library = if args.no_zoo {
        Library::default()
    } else {
        Library::zoo()
    };
    let partial = args.partial.as_deref().map(load_matrix).transpose()?;
    let kind = (partial.as_ref())
        .and_then(|m| m.header.machine.as_ref())
        .and_then(|machine| machine.kind.as_deref());
    for dir in &args.library {
        library.add(&profiler::predict::kind_folder(dir, kind))?;
    }
    if args.evaluate {
        println!("given {:?} CPUs:", args.given);
        println!(
            "{}",
            evaluate::leave_one_out(&library, &args.given, &SETTINGS).describe()
        );
        let seq = evaluate::sequential(&library, args.precision, &SETTINGS);
        println!(
            "measured one cell at a time to ±{:.1}%: {:.2} of {} CPU levels a job",
            100.0 * args.precision,
            seq.mean_measured,
            seq.levels
        );
        println!("{}", seq.scores.describe());
        return Ok(ExitCode::SUCCESS);
    }
    let (Some(partial_path), Some(partial)) = (&args.partial, &partial) else {
        anyhow::bail!("give a partial matrix, or --evaluate");
    };
    let prediction = predict_matrix(partial, &args.cpu, &library, &SETTINGS)?;
    let out = args.output_for(partial_path);
    profiler::matrix::rewrite_matrix(&out, &prediction.matrix)?;
    println!("{}", prediction.describe());
    eprintln!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

fn show(args: profiler::cli::ShowArgs) -> anyhow::Result<ExitCode> {
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
