//! Alibaba GPU cluster trace v2023 (openb, ATC'23 "Beware of Fragmentation") pod lists:
//! header `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//! deletion_time,scheduled_time`. Pods without GPUs and pods never scheduled are left out; a
//! pod sharing a GPU (gpu_milli < 1000) counts as one GPU. Duration = deletion - scheduled.
//! The CPU and memory requests are kept on the job (`cpu_request`, `mem_request_gb`) and in the
//! outputs, and the `request` mechanism allocates them; throughput comes from the profile of the
//! model assigned (the trace names none).

use super::{Assigner, Binder, field, finish, for_each_line};
use crate::replay::bounds;
use crate::replay::error::ReplayError;
use crate::replay::job::JobSpec;
use std::path::Path;

pub fn read(
    path: &Path,
    binder: &mut Binder,
    assign: &mut Assigner,
) -> Result<Vec<JobSpec>, ReplayError> {
    let mut raw = Vec::new();
    for_each_line(path, |n, line| {
        let f: Vec<&str> = line.split(',').collect();
        if n == 1 {
            if f.first().map(|s| s.trim()) != Some("name") || f.len() != 11 {
                return Err(ReplayError::parse(
                    path,
                    n,
                    "expected header name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,\
                     pod_phase,creation_time,deletion_time,scheduled_time",
                ));
            }
            return Ok(());
        }
        if f.len() != 11 {
            return Err(ReplayError::parse(
                path,
                n,
                format!("expected 11 columns, found {}", f.len()),
            ));
        }
        let cpu_milli: f64 = field(path, n, &f, 1, "cpu_milli")?;
        let mem_mib: f64 = field(path, n, &f, 2, "memory_mib")?;
        let gpus: u32 = field(path, n, &f, 3, "num_gpu")?;
        let created: f64 = field(path, n, &f, 8, "creation_time")?;
        let bounded = |what: &str, x: f64, hi: f64| {
            bounds::in_range(what, x, 0.0, hi).map_err(|e| ReplayError::parse(path, n, e))
        };
        bounded("cpu_milli", cpu_milli, bounds::MAX_REQUEST * 1000.0)?;
        bounded("memory_mib", mem_mib, bounds::MAX_REQUEST * 1000.0)?;
        bounded("creation_time", created, bounds::MAX_TIME_S)?;
        if gpus == 0 || f[10].trim().is_empty() || f[9].trim().is_empty() {
            return Ok(());
        }
        let deleted: f64 = field(path, n, &f, 9, "deletion_time")?;
        let scheduled: f64 = field(path, n, &f, 10, "scheduled_time")?;
        bounded("deletion_time", deleted, bounds::MAX_TIME_S)?;
        bounded("scheduled_time", scheduled, bounds::MAX_TIME_S)?;
        raw.push((
            n,
            created,
            (deleted - scheduled).max(1.0),
            gpus,
            cpu_milli / 1000.0,
            mem_mib * 1.048576e6 / 1e9,
        ));
        Ok(())
    })?;
    raw.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let t0 = raw.first().map_or(0.0, |r| r.1);
    let mut jobs = Vec::with_capacity(raw.len());
    for (id, (n, created, dur, gpus, cpu, mem)) in raw.into_iter().enumerate() {
        let (model, work) = assign.assign(gpus, dur);
        let job = JobSpec {
            id: id as u64,
            model,
            arrival_s: created - t0,
            gpus,
            work_samples: work,
            cpu_request: Some(cpu),
            mem_request_gb: Some(mem),
        };
        if binder.check(n, &job)? {
            jobs.push(job);
        }
    }
    finish(jobs, path)
}
