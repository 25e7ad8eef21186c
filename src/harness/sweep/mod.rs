//! The sweep: plan the grid, run the job under each allocation (re-capping a running job where
//! that is valid), measure, fill the memory axis with the cache model, and append every cell
//! to the matrix file as soon as it is known.

use crate::harness::cgroup::CgroupRoot;
use crate::harness::cgroup::effective::EffectiveCaps;
use crate::harness::measure::gpu::GpuMonitor;
use crate::harness::process::job_launch::render_argv;
use crate::matrix::Matrix;
use crate::spec::Vars;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

mod api;
mod blocks;
pub mod cpu_search;
mod disturbance;
pub mod fleet;
mod footprint;
mod host;
mod launches;
mod live_check;
mod memory_inputs;
mod output;
mod passes;
pub(crate) mod plan;
mod points;
mod reread;
mod run;
mod search;
mod setup;
mod visit;
mod visit_progress;
mod warmup_end;

pub use api::{Silent, SlurmStep, SweepError, SweepObserver, SweepOptions, SweepOutcome};
pub use blocks::DRIFT_SLACK;
pub use launches::{
    add_launch, combine_cells, combine_throughputs, hold_launch_spread, hold_pooled_spread,
    launch_rates, launch_sd, pooled_spread,
};
use live_check::LiveCheckState;
use run::Run;

pub use live_check::{LIVE_CHECK_MAX_TOLERANCE, LIVE_CHECK_SLACK};
pub use passes::NARROWING_SHARE;

const POLL: Duration = Duration::from_millis(100);

/// A sweep in progress: what it was asked and where it reports, the machine it runs on, and the
/// parts that own the rest of its state, each in its file.
struct Sweep<'a> {
    opts: &'a SweepOptions,
    observer: &'a mut dyn SweepObserver,
    cancel: &'a AtomicBool,
    root: Option<CgroupRoot>,
    gpu: Option<GpuMonitor>,
    /// Inside a Slurm step: the step and the caps of its cgroup, checked at every point.
    step: Option<(SlurmStep, EffectiveCaps)>,
    /// The levels and how they are walked ([`plan::Axes`]).
    axes: plan::Axes,
    /// The memory axis's inputs: levels, dataset, cache model ([`memory_inputs::MemoryInputs`]).
    mem: memory_inputs::MemoryInputs,
    /// The blocks measured so far and the one being measured ([`blocks::Blocks`]).
    blocks: blocks::Blocks,
    /// Whether re-capping a running job is still to be checked against a fresh start.
    live_check: LiveCheckState,
    /// The probe of the host's speed on the job's CPUs ([`host::HostWatch`]).
    host: host::HostWatch,
    /// The matrix written so far ([`output::Output`]).
    out: output::Output,
    launches: LaunchCount,
}

/// How many times the job was started.
#[derive(Debug, Clone, Copy, Default)]
struct LaunchCount {
    started: u32,
    /// Launches of the sweep this one resumes, so that visits keep telling launches apart.
    resumed: u32,
}

/// Runs a whole sweep. Every finished cell is already on disk when this returns, also on error
/// or interruption (`cancel` set by SIGINT/SIGTERM).
pub fn run_sweep(
    opts: &SweepOptions,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<SweepOutcome, SweepError> {
    run_sweep_with(opts, None, observer, cancel)
}

/// Runs one CPU level of a sweep inside a Slurm job, under the caps Slurm's cgroups apply (see
/// [`SlurmStep`]); refuses to measure if they are not the point's.
pub fn run_sweep_in_slurm_step(
    opts: &SweepOptions,
    step: &SlurmStep,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<SweepOutcome, SweepError> {
    run_sweep_with(opts, Some(step), observer, cancel)
}

fn run_sweep_with(
    opts: &SweepOptions,
    step: Option<&SlurmStep>,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Result<SweepOutcome, SweepError> {
    let started = Instant::now();
    let step_caps = step.map(|s| setup::step_caps(opts, s)).transpose()?;
    let spec = &opts.spec.spec;
    let dataset = setup::dataset(opts, observer)?;
    let cpu_levels = setup::cpu_levels(spec, step_caps.as_ref());
    let memory = setup::memory_levels(spec, dataset.as_ref(), step_caps.as_ref());
    let log_dir = opts.output.with_extension("logs");
    std::fs::create_dir_all(&log_dir).map_err(|source| SweepError::Logs {
        path: log_dir.clone(),
        source,
    })?;
    // Slurm owns a step's cgroups: the profiler makes none of its own there.
    let root = if opts.caps && step_caps.is_none() {
        Some(CgroupRoot::open(&opts.cgroup_parent)?)
    } else {
        None
    };
    let search = setup::cpu_search(opts, &cpu_levels, root.as_ref(), step_caps.as_ref())?;
    let storage_throttle = setup::storage_throttle(opts, step_caps.is_some(), observer)?;
    let gpu = setup::gpu_monitor(spec, observer);
    let (mode, live_check) = setup::mode(opts, step_caps.is_some());
    let mut sweep = Sweep {
        opts,
        observer,
        cancel,
        root,
        gpu,
        step: step_caps,
        axes: plan::Axes {
            cpu: cpu_levels.clone(),
            search,
            search_results: Vec::new(),
            params: spec.sweep.params.clone(),
            mode,
            depends_on_cpu: opts.spec.depends_on_cpu_level(),
            rounds: spec.measure.rounds,
        },
        mem: memory_inputs::MemoryInputs::new(&opts.spec, memory, dataset, storage_throttle),
        blocks: blocks::Blocks::seeded_now(),
        live_check,
        host: host::HostWatch::default(),
        out: output::Output::new(log_dir),
        launches: LaunchCount::default(),
    };
    if !opts.caps {
        return sweep.check_uncapped(started);
    }
    if opts.resume && opts.output.exists() {
        sweep.resume_from_file()?;
    }
    sweep.host.start(sweep.root.as_ref(), sweep.observer);
    sweep.run_combinations(&cpu_levels)?;
    let matrix = Matrix {
        header: sweep
            .out
            .header
            .clone()
            .unwrap_or_else(|| sweep.make_header()),
        cells: sweep.out.cells.clone(),
    };
    if sweep.out.writer.is_none() {
        // Nothing new was run (all cells resumed); still leave a valid file behind.
        sweep.ensure_writer()?;
    }
    Ok(SweepOutcome {
        matrix,
        path: opts.output.clone(),
        launches: sweep.launches.started,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

fn render_all(argv: &[String], vars: &Vars, spec: &Path) -> Result<Vec<String>, SweepError> {
    render_argv(argv, vars).map_err(|source| SweepError::Template {
        spec: spec.to_owned(),
        source,
    })
}

fn total_memory_bytes() -> u64 {
    use procfs::Current;
    procfs::Meminfo::current()
        .map(|m| m.mem_total)
        .unwrap_or(u64::MAX / 2)
}
