//! Elastic trace adapters: each reads one format into [`super::job::ElasticJobSpec`]s, ascending
//! by arrival, with errors that name the file and line.
//!
//! - [`ones`]: ONES's trace (`time,model,task,epoch_size,patience,batch_size,lr,max_lr,
//!   target_acc,num_gpus`), jobs that scale their batch with their GPUs;
//! - [`pollux`]: Pollux's workloads (`name,time,application,num_replicas,batch_size`), jobs at
//!   the user's fixed batch.
//!
//! Both return every row; choosing the first N jobs is the caller's business.

pub mod ones;
pub mod pollux;

use super::job::ElasticJobSpec;
use crate::replay::bounds;
use crate::replay::error::ReplayError;
use crate::replay::workload::{columns, field};
use std::path::Path;

/// Largest global batch or per-GPU batch a trace may give.
pub const MAX_BATCH: u32 = 1 << 24;
/// Most GPUs a trace job may ask for.
pub const MAX_GPUS: u32 = 1 << 16;

/// The header must be exactly `expected` (spaces around names allowed).
fn check_header(path: &Path, n: usize, line: &str, expected: &str) -> Result<(), ReplayError> {
    let got: Vec<&str> = line.split(',').map(str::trim).collect();
    let want: Vec<&str> = expected.split(',').collect();
    if got == want {
        Ok(())
    } else {
        Err(ReplayError::parse(
            path,
            n,
            format!("expected header {expected}, found {:?}", line.trim()),
        ))
    }
}

/// A finite number in [lo, hi], named on failure.
fn number_in(
    path: &Path,
    n: usize,
    f: &[&str],
    i: usize,
    name: &str,
    lo: f64,
    hi: f64,
) -> Result<f64, ReplayError> {
    let x: f64 = field(path, n, f, i, name)?;
    bounds::in_range(name, x, lo, hi).map_err(|e| ReplayError::parse(path, n, e))
}

/// An integer in [lo, hi], named on failure.
fn count_in(
    path: &Path,
    n: usize,
    f: &[&str],
    i: usize,
    name: &str,
    lo: u32,
    hi: u32,
) -> Result<u32, ReplayError> {
    let x: u32 = field(path, n, f, i, name)?;
    if x < lo || x > hi {
        return Err(ReplayError::parse(
            path,
            n,
            format!("{name} {x} is outside [{lo}, {hi}]"),
        ));
    }
    Ok(x)
}

/// Sorts by arrival (ties in file order) and numbers the jobs 0.. in that order.
fn finish(mut jobs: Vec<ElasticJobSpec>) -> Vec<ElasticJobSpec> {
    jobs.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s).then(a.id.cmp(&b.id)));
    for (i, j) in jobs.iter_mut().enumerate() {
        j.id = i as u64;
    }
    jobs
}
