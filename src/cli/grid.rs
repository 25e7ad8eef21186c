//! The `profiler replay` flags of scenario grids, and what each mode does: a local run, a
//! Slurm submission, one array task (`--chunk-index`), or the merge of the tasks' parts.

use crate::replay::grid::error::GridError;
use crate::replay::grid::local::{GridObserver, default_threads};
use crate::replay::grid::slurm::{SlurmOptions, cancel_on_signals, submit_and_wait};
use crate::replay::grid::spec::GridSpec;
use std::path::{Path, PathBuf};

/// Default scenarios per Slurm array task.
pub const DEFAULT_CHUNK: usize = 10;

#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct GridArgs {
    /// Run every scenario of a grid file (clusters x loads or traces x splits x seeds x
    /// schemes, see docs/REPLAY.md "Scenario grids") instead of one replay; with --out, writes
    /// summary.{csv,parquet} (a row per scenario) and {mean,p99}_jct_vs_load.{png,svg}. Other
    /// workload and scheme flags are ignored: the grid file holds them.
    #[arg(long, value_name = "GRID.toml")]
    pub grid: Option<PathBuf>,
    /// Grid: scenarios replayed at once (default: the available CPUs).
    #[arg(long, requires = "grid")]
    pub threads: Option<usize>,
    /// Grid: run as a Slurm job array (sbatch; one task per --chunk scenarios) and a merge job
    /// after it; waits for the merge, Ctrl-C cancels both. Needs --out on a filesystem the
    /// nodes share.
    #[arg(long, requires = "grid")]
    pub slurm: bool,
    /// Grid with --slurm: the partition for the array and the merge job.
    #[arg(long, requires = "slurm")]
    pub partition: Option<String>,
    /// Grid with --slurm: CPUs per array task (each task replays that many scenarios at once).
    #[arg(long, requires = "slurm", default_value_t = 1)]
    pub cpus_per_task: usize,
    /// Grid with --slurm: memory per array task and for the merge job, in Slurm's syntax
    /// (`2G`, `500M`); `none` leaves it to the cluster's default (which may be a whole node).
    #[arg(long, requires = "slurm", default_value = "2G")]
    pub mem_per_task: String,
    /// Grid: scenarios per Slurm array task.
    #[arg(long, requires = "grid", default_value_t = DEFAULT_CHUNK)]
    pub chunk: usize,
    /// Grid: run only array task I's scenarios and write OUT/parts/part-I.parquet (what each
    /// task of --slurm runs).
    #[arg(long, requires = "grid", value_name = "I", conflicts_with_all = ["slurm", "merge_parts"])]
    pub chunk_index: Option<usize>,
    /// Grid: merge OUT/parts/ into the summary table and plots (the job after the array).
    #[arg(long, requires = "grid", conflicts_with = "slurm")]
    pub merge_parts: bool,
}

fn need_out<'a>(out: Option<&'a Path>, flag: &str) -> Result<&'a Path, GridError> {
    out.ok_or_else(|| {
        GridError::Replay(crate::replay::ReplayError::Options(format!(
            "{flag} needs --out DIR (where the parts and the summary go)"
        )))
    })
}

/// Runs the mode the flags ask for; returns what to print on stdout. `log` gets progress lines
/// for stderr.
pub fn run(
    args: &GridArgs,
    out: Option<&Path>,
    observer: &dyn GridObserver,
    log: &mut dyn FnMut(&str),
) -> Result<String, GridError> {
    let Some(path) = &args.grid else {
        return Ok(String::new());
    };
    if args.chunk == 0 {
        return Err(GridError::Replay(crate::replay::ReplayError::Options(
            "--chunk must be at least 1".into(),
        )));
    }
    let grid = GridSpec::load(path)?;
    let threads = args.threads.unwrap_or_else(default_threads).max(1);
    let listing = |written: &[PathBuf]| {
        written
            .iter()
            .map(|p| format!("wrote {}\n", p.display()))
            .collect::<String>()
    };
    if let Some(i) = args.chunk_index {
        let out = need_out(out, "--chunk-index")?;
        let (part, range) =
            crate::replay::grid::run_chunk(&grid, args.chunk, i, threads, observer, out)?;
        return Ok(format!(
            "scenarios {}..{}: wrote {}\n",
            range.start,
            range.end,
            part.display()
        ));
    }
    if args.merge_parts {
        let out = need_out(out, "--merge-parts")?;
        let (rows, written) = crate::replay::grid::merge(&grid, args.chunk, out)?;
        return Ok(format!(
            "merged {rows} scenarios into {}\n{}",
            out.join("summary.csv").display(),
            listing(&written)
        ));
    }
    if args.slurm {
        let out = need_out(out, "--slurm")?;
        let cancel = cancel_on_signals()
            .map_err(|e| GridError::Slurm(format!("installing the Ctrl-C handler: {e}")))?;
        let opts = SlurmOptions {
            partition: args.partition.clone(),
            chunk: args.chunk,
            cpus_per_task: args.cpus_per_task.max(1),
            mem: (args.mem_per_task != "none").then(|| args.mem_per_task.clone()),
            profiler: std::env::current_exe().map_err(|e| {
                GridError::Slurm(format!("finding the profiler binary to run: {e}"))
            })?,
        };
        let s = submit_and_wait(path, grid.len(), out, &opts, &cancel, log)?;
        return Ok(format!(
            "array job {} ({} tasks) and merge job {} done: {} scenarios in {}\n",
            s.array_job,
            s.tasks,
            s.merge_job,
            grid.len(),
            out.join("summary.csv").display()
        ));
    }
    let (results, written) = crate::replay::grid::run_local(&grid, threads, observer, out)?;
    Ok(format!(
        "{}{}",
        crate::replay::grid::summary::render(&results),
        listing(&written)
    ))
}
