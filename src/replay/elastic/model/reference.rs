//! Readers for the measured data the elastic model is calibrated from (shipped under
//! `workloads/elastic/`, see its PROVENANCE.md): Pollux's step times (`placements.csv`,
//! `scalability.csv`) and training curves (`validation-<B>.csv`), and ONES's per-epoch job
//! history (`job_history.csv`). Errors name the file and line.

use crate::replay::error::ReplayError;
use crate::replay::workload::{columns, field, for_each_line};
use std::path::Path;

/// One measured step: `replicas` GPUs over `nodes` servers at `local_batch` samples per GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepSample {
    pub replicas: u32,
    pub nodes: u32,
    pub local_batch: f64,
    /// Seconds per step, synchronisation included.
    pub step_s: f64,
    /// Seconds of the step spent synchronising gradients.
    pub sync_s: f64,
}

/// One row of a validation curve: the state after training at a fixed global batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValidationRow {
    /// Efficiency-weighted progress, in steps at the base batch.
    pub progress: f64,
    /// Steps actually taken at the curve's batch.
    pub iteration: f64,
    pub metric: f64,
    pub grad_sqr: f64,
    pub grad_var: f64,
}

/// A training run at one global batch.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationCurve {
    pub batch: u32,
    pub rows: Vec<ValidationRow>,
}

/// One epoch of a finished ONES job (`job_history.csv`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistoryRow {
    pub id: u64,
    pub epoch: u32,
    pub epoch_size: f64,
    pub total_workload: f64,
    pub global_batch: f64,
    pub lr: f64,
    pub initial_loss: f64,
    pub acc: f64,
    /// Samples/s over all the job's GPUs.
    pub throughput: f64,
}

fn header(path: &Path, n: usize, line: &str, expected: &str) -> Result<(), ReplayError> {
    if line.trim() == expected {
        Ok(())
    } else {
        Err(ReplayError::parse(
            path,
            n,
            format!("expected header {expected}, found {:?}", line.trim()),
        ))
    }
}

/// A finite number >= 0 (> 0 when `positive`), named on failure.
fn number(
    path: &Path,
    n: usize,
    f: &[&str],
    i: usize,
    name: &str,
    positive: bool,
) -> Result<f64, ReplayError> {
    let x: f64 = field(path, n, f, i, name)?;
    if !x.is_finite() || x < 0.0 || (positive && x == 0.0) {
        let want = if positive { "> 0" } else { ">= 0" };
        return Err(ReplayError::parse(
            path,
            n,
            format!("{name} {x} is not a finite number {want}"),
        ));
    }
    Ok(x)
}

/// Pollux's `placements.csv`: `placement,local_bsz,step_time,sync_time`, where the placement
/// gives the GPUs on each server used, one digit a server ("22": 2 servers x 2 GPUs).
pub fn read_placements(path: &Path) -> Result<Vec<StepSample>, ReplayError> {
    let mut out = Vec::new();
    for_each_line(path, |n, line| {
        if n == 1 {
            return header(path, n, line, "placement,local_bsz,step_time,sync_time");
        }
        let f: Vec<&str> = line.split(',').collect();
        columns(path, n, &f, 4)?;
        let p = f[0].trim();
        if p.is_empty() || p.len() > 64 || !p.bytes().all(|b| b.is_ascii_digit() && b != b'0') {
            return Err(ReplayError::parse(
                path,
                n,
                format!("placement {p:?} is not a string of GPUs per server (digits 1-9)"),
            ));
        }
        out.push(StepSample {
            replicas: p.bytes().map(|b| (b - b'0') as u32).sum(),
            nodes: p.len() as u32,
            local_batch: number(path, n, &f, 1, "local_bsz", true)?,
            step_s: number(path, n, &f, 2, "step_time", true)?,
            sync_s: number(path, n, &f, 3, "sync_time", false)?,
        });
        Ok(())
    })?;
    Ok(out)
}

/// Pollux's `scalability.csv`: `num_nodes,num_replicas,local_bsz,step_time,sync_time`.
pub fn read_scalability(path: &Path) -> Result<Vec<StepSample>, ReplayError> {
    let mut out = Vec::new();
    for_each_line(path, |n, line| {
        if n == 1 {
            return header(
                path,
                n,
                line,
                "num_nodes,num_replicas,local_bsz,step_time,sync_time",
            );
        }
        let f: Vec<&str> = line.split(',').collect();
        columns(path, n, &f, 5)?;
        let nodes: u32 = field(path, n, &f, 0, "num_nodes")?;
        let replicas: u32 = field(path, n, &f, 1, "num_replicas")?;
        if nodes == 0 || replicas < nodes || replicas > 1 << 20 {
            return Err(ReplayError::parse(
                path,
                n,
                format!("{replicas} replicas on {nodes} servers: need 1 <= servers <= replicas"),
            ));
        }
        out.push(StepSample {
            replicas,
            nodes,
            local_batch: number(path, n, &f, 2, "local_bsz", true)?,
            step_s: number(path, n, &f, 3, "step_time", true)?,
            sync_s: number(path, n, &f, 4, "sync_time", false)?,
        });
        Ok(())
    })?;
    Ok(out)
}

/// Pollux's `validation-<B>.csv` (`progress,iteration,metric,grad_sqr,grad_var`); the batch B
/// comes from the file name. Progress must not decrease.
pub fn read_validation(path: &Path) -> Result<ValidationCurve, ReplayError> {
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let batch = name
        .strip_prefix("validation-")
        .and_then(|b| b.parse::<u32>().ok())
        .filter(|&b| b > 0)
        .ok_or_else(|| {
            ReplayError::parse(path, 0, "file name is not validation-<global batch>.csv")
        })?;
    let mut rows: Vec<ValidationRow> = Vec::new();
    for_each_line(path, |n, line| {
        if n == 1 {
            return header(path, n, line, "progress,iteration,metric,grad_sqr,grad_var");
        }
        let f: Vec<&str> = line.split(',').collect();
        columns(path, n, &f, 5)?;
        let row = ValidationRow {
            progress: number(path, n, &f, 0, "progress", true)?,
            iteration: number(path, n, &f, 1, "iteration", true)?,
            metric: field(path, n, &f, 2, "metric")?,
            grad_sqr: number(path, n, &f, 3, "grad_sqr", false)?,
            grad_var: number(path, n, &f, 4, "grad_var", false)?,
        };
        if let Some(prev) = rows.last()
            && row.progress < prev.progress
        {
            return Err(ReplayError::parse(path, n, "progress decreases"));
        }
        rows.push(row);
        Ok(())
    })?;
    if rows.is_empty() {
        return Err(ReplayError::parse(path, 1, "no rows"));
    }
    Ok(ValidationCurve { batch, rows })
}

/// Every `validation-*.csv` in `dir`, ascending by batch.
pub fn read_validations(dir: &Path) -> Result<Vec<ValidationCurve>, ReplayError> {
    let mut curves = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(ReplayError::io(dir))? {
        let p = entry.map_err(ReplayError::io(dir))?.path();
        let n = p.file_name().and_then(|s| s.to_str()).unwrap_or("");
        if n.starts_with("validation-") && n.ends_with(".csv") {
            curves.push(read_validation(&p)?);
        }
    }
    curves.sort_by_key(|c| c.batch);
    Ok(curves)
}

/// ONES's `job_history.csv`: `id,epoch,epoch_size,num_samples,total_workload,batch_size,lr,
/// initial_loss,loss,acc,throughput`.
pub fn read_history(path: &Path) -> Result<Vec<HistoryRow>, ReplayError> {
    let mut out = Vec::new();
    for_each_line(path, |n, line| {
        if n == 1 {
            return header(
                path,
                n,
                line,
                "id,epoch,epoch_size,num_samples,total_workload,batch_size,lr,initial_loss,loss,acc,throughput",
            );
        }
        let f: Vec<&str> = line.split(',').collect();
        columns(path, n, &f, 11)?;
        out.push(HistoryRow {
            id: field(path, n, &f, 0, "id")?,
            epoch: field(path, n, &f, 1, "epoch")?,
            epoch_size: number(path, n, &f, 2, "epoch_size", true)?,
            total_workload: number(path, n, &f, 4, "total_workload", true)?,
            global_batch: number(path, n, &f, 5, "batch_size", true)?,
            lr: number(path, n, &f, 6, "lr", true)?,
            initial_loss: number(path, n, &f, 7, "initial_loss", false)?,
            acc: number(path, n, &f, 9, "acc", false)?,
            throughput: number(path, n, &f, 10, "throughput", true)?,
        });
        Ok(())
    })?;
    Ok(out)
}
