//! Synergy's replay CSV: `job_id, model, arrival_s, total_iterations, gpu_demand`, no header.
//! Work = total_iterations x batch size per GPU (from the profile) x GPUs.

use super::{Binder, field, finish, for_each_line};
use crate::replay::error::ReplayError;
use crate::replay::job::JobSpec;
use std::path::Path;

pub fn read(path: &Path, binder: &mut Binder) -> Result<Vec<JobSpec>, ReplayError> {
    let mut jobs = Vec::new();
    for_each_line(path, |n, line| {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 5 {
            return Err(ReplayError::parse(
                path,
                n,
                format!(
                    "expected 5 columns (job_id, model, arrival_s, total_iterations, \
                     gpu_demand), found {}",
                    f.len()
                ),
            ));
        }
        let id: u64 = field(path, n, &f, 0, "job_id")?;
        let model = f[1].trim().to_owned();
        let arrival_s: f64 = field(path, n, &f, 2, "arrival_s")?;
        let iters: f64 = field(path, n, &f, 3, "total_iterations")?;
        let gpus: u32 = field(path, n, &f, 4, "gpu_demand")?;
        let mut job = JobSpec {
            id,
            model,
            arrival_s,
            gpus,
            work_samples: iters,
            cpu_request: None,
            mem_request_gb: None,
        };
        if binder.check(n, &job)? {
            let p = binder
                .profiles
                .get(binder.profiles.lookup(&job.model).unwrap_or(0));
            let batch = p.batch_size_per_gpu.ok_or_else(|| {
                ReplayError::parse(
                    path,
                    n,
                    format!(
                        "model {} has no batch_size_per_gpu in its matrix, so iterations \
                         cannot be turned into samples",
                        p.model
                    ),
                )
            })?;
            job.work_samples = binder.work(n, &job, iters * batch as f64 * gpus as f64)?;
            jobs.push(job);
        }
        Ok(())
    })?;
    finish(jobs, path)
}
