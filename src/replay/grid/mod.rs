//! Scenario grids (`profiler replay --grid GRID.toml`): the product of clusters, loads or
//! traces, class splits, seeds and schemes, each scenario one deterministic replay, run on this
//! machine in parallel or as a Slurm job array, summarised in one table (a row per scenario)
//! and load plots. See docs/REPLAY.md, "Scenario grids".
//!
//! * [`spec`]: the grid file and its validation (file:line errors, a size limit)
//! * [`expand`]: scenarios with stable indices and ids, their replay options, array chunks
//! * [`local`]: the thread pool
//! * [`slurm`]: the job array, the dependent merge job, cancellation
//! * [`summary`]: the table, part files and their merge, plots, the text table
//! * [`cli`]: the `replay` flags and what each mode does

pub mod error;
pub mod expand;
pub mod local;
pub mod slurm;
pub mod spec;
pub mod summary;

pub use error::GridError;
pub use expand::{Scenario, scenarios};
pub use local::{GridObserver, run_scenarios};
pub use spec::GridSpec;
pub use summary::ScenarioResult;

use std::path::{Path, PathBuf};

/// Runs every scenario here on `threads` threads; with `out`, writes the summary table and
/// plots there (returns the files written).
pub fn run_local(
    grid: &GridSpec,
    threads: usize,
    observer: &dyn GridObserver,
    out: Option<&Path>,
) -> Result<(Vec<ScenarioResult>, Vec<PathBuf>), GridError> {
    let all = scenarios(grid);
    let results = run_scenarios(grid, &all, threads, observer)?;
    let mut written = Vec::new();
    if let Some(out) = out {
        let mut df = summary::frame(&results)?;
        written.extend(summary::write_outputs(&mut df, out)?);
        written.push(out.join("summary.csv"));
        written.push(out.join("summary.parquet"));
    }
    Ok((results, written))
}

/// Runs array task `chunk_index`'s scenarios (`chunk` per task) and writes its part file into
/// `out/parts/`; returns the part's path and the scenarios' index range.
pub fn run_chunk(
    grid: &GridSpec,
    chunk: usize,
    chunk_index: usize,
    threads: usize,
    observer: &dyn GridObserver,
    out: &Path,
) -> Result<(PathBuf, std::ops::Range<usize>), GridError> {
    let all = scenarios(grid);
    let tasks = expand::chunk_count(all.len(), chunk);
    if chunk_index >= tasks {
        return Err(GridError::Replay(super::ReplayError::Options(format!(
            "--chunk-index {chunk_index}: the grid has {} scenarios, {tasks} tasks of {chunk}",
            all.len()
        ))));
    }
    let range = expand::chunk_range(all.len(), chunk, chunk_index);
    let results = run_scenarios(grid, &all[range.clone()], threads, observer)?;
    let path = summary::part_path(out, chunk_index);
    summary::write_part(&mut summary::frame(&results)?, &path)?;
    Ok((path, range))
}

/// Merges the parts in `out/parts/` into `out/summary.{csv,parquet}` and the plots; returns
/// the rows merged and the plots written.
pub fn merge(
    grid: &GridSpec,
    chunk: usize,
    out: &Path,
) -> Result<(usize, Vec<PathBuf>), GridError> {
    let all = scenarios(grid);
    let mut df = summary::merge_parts(out, &all, chunk)?;
    let written = summary::write_outputs(&mut df, out)?;
    Ok((df.height(), written))
}
