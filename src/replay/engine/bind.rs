//! Binding a trace job to its profile: its rates, its best-case demand on the cluster's
//! servers and Synergy's per-job counters.

use super::super::cluster::Cluster;
use super::super::error::ReplayError;
use super::super::job::{JobSpec, JobState, SynergyCounters};
use super::super::profile::{ProfileSet, Semantics};

/// Binds a trace job to its profile.
pub fn bind(
    job: JobSpec,
    cluster: &Cluster,
    profiles: &ProfileSet,
    sem: Semantics,
) -> Result<JobState, ReplayError> {
    let pi = profiles
        .lookup(&job.model)
        .ok_or_else(|| ReplayError::UnknownModel {
            path: "<workload>".into(),
            line: 0,
            job_id: job.id,
            model: job.model.clone(),
            known: profiles.known(),
        })?;
    if job.gpus > cluster.total_gpus {
        return Err(ReplayError::JobTooWide {
            job_id: job.id,
            gpus: job.gpus,
            max_gpus: cluster.total_gpus,
        });
    }
    let p = profiles.get(pi);
    let g = job.gpus as f64;
    let (c, m) = cluster.reference_share();
    let prop_rate = p.rate(job.gpus, c * g, m * g, sem);
    if prop_rate.is_nan() || prop_rate <= 0.0 {
        return Err(ReplayError::Profile(format!(
            "model {} has no throughput at the proportional share ({c} cores, {m} GB per GPU)",
            p.model
        )));
    }
    // Synergy counts iterations: a trace gives them (work = iterations x batch x GPUs, exact),
    // other workloads give work that floors to whole iterations as `int(duration / iter_time)`.
    let per_gpu_prop = p.per_gpu(c, m, sem);
    let batch = p.batch_size_per_gpu.unwrap_or(1).max(1) as f64;
    let samples_per_iter = batch * g;
    let total_iters = ((job.work_samples / samples_per_iter) * (1.0 + 1e-12))
        .floor()
        .max(1.0) as u64;
    let speedup_orig = p.best_tput / per_gpu_prop;
    let best = Demand {
        cpus: g * p.best_cpu,
        mem_gb: g * p.best_mem,
        speedup: speedup_orig,
    };
    let demand = match sem {
        Semantics::Synergy => {
            let (bc, bm) = p.declared_best.unwrap_or((p.best_cpu, p.best_mem));
            let declared = Demand {
                cpus: g * bc,
                mem_gb: g * bm,
                speedup: speedup_orig,
            };
            declared.synergy_capped(job.gpus, &cluster.servers[0])
        }
        Semantics::Exact if job.gpus > cluster.max_server_gpus => Demand {
            cpus: best.cpus.min(c * g),
            mem_gb: best.mem_gb.min(m * g),
            speedup: speedup_orig,
        },
        Semantics::Exact => best,
    };
    let synergy = SynergyCounters {
        iter_s: batch / per_gpu_prop,
        samples_per_iter,
        total_iters,
        done_iters: 0,
        speedup_orig: demand.speedup,
        speedup: demand.speedup,
        priority: 0,
        last_run_end: None,
    };
    Ok(JobState {
        profile: u32::try_from(pi)
            .map_err(|_| ReplayError::Profile(format!("more than {} profiles", u32::MAX)))?,
        remaining: job.work_samples,
        prop_rate,
        best_rate: g * p.best_tput,
        best_cpu: demand.cpus,
        best_mem: demand.mem_gb,
        spec: job,
        attained_gpu_s: 0.0,
        attained_dominant_s: 0.0,
        first_start: None,
        finish: None,
        contention_sum: 0.0,
        rounds_active: 0,
        rounds_run: 0,
        failed: false,
        synergy,
    })
}

/// A job's best-case demand in all (cores, GB) and its speed-up there over the proportional
/// share.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Demand {
    cpus: f64,
    mem_gb: f64,
    speedup: f64,
}

impl Demand {
    /// Synergy's binding of a job's demand to a server shape (`add_synergy_profile`): a
    /// dimension above one server is capped at the server, and the speed-up of a job capped in
    /// CPUs falls on the straight line from 1 at the proportional share to the best case; a job
    /// wider than a server asks for its proportional share in every capped dimension and runs
    /// at speed-up 1 (its storage demand, a server's share per GPU, always exceeds a server).
    fn synergy_capped(self, gpus: u32, server: &super::super::cluster::Server) -> Demand {
        let g = gpus as f64;
        let wide = gpus > server.gpus;
        let per_gpu = |whole: f64| g * (whole / server.gpus as f64);
        // A demand above the server's `whole`: the server, or the proportional share when wide.
        let cap = |want: f64, whole: f64| {
            (want > whole).then(|| if wide { per_gpu(whole) } else { whole })
        };
        let mut d = self;
        let mut interpolate = false;
        if let Some(c) = cap(d.cpus, server.cpus) {
            d.cpus = c;
            interpolate = !wide;
        }
        if let Some(m) = cap(d.mem_gb, server.mem_gb) {
            d.mem_gb = m;
            interpolate = !wide;
        }
        if wide {
            d.speedup = 1.0;
        } else if interpolate {
            let fair = per_gpu(server.cpus);
            let span = self.cpus - fair;
            if span != 0.0 {
                d.speedup = 1.0 + (self.speedup - 1.0) / span * (d.cpus - fair);
            }
        }
        d
    }
}
