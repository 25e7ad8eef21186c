//! Binding a trace job to its profile: its rates, its demand on the cluster's servers (as the
//! semantics' rules have it) and Synergy's per-job counters.

use super::cluster::Cluster;
use super::error::ReplayError;
use super::job::{JobKinds, JobSpec, JobState, SynergyCounters};
use super::profile::{Profile, ProfileSet, Semantics};
use super::semantics::{Demand, rules};

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
    let kinds = kind_profiles(&job, cluster, profiles)?;
    // The first group's kind is the reference the job's share, best case and work are read on.
    let pi = kinds.as_ref().map_or(pi, |k| {
        k.profiles[cluster.servers[0].kind as usize] as usize
    });
    let p = profiles.get(pi);
    let g = job.gpus as f64;
    let (c, m) = cluster.reference_share();
    let prop_rate = p.rate(job.gpus, c * g, m * g, sem);
    if prop_rate.is_nan() || prop_rate <= 0.0 {
        return Err(ReplayError::Profile(format!(
            "model {} has no throughput at the proportional share ({c} cores, {m} GB per GPU): \
             its matrix's cells there failed or are missing (`profiler show --cells {}` says \
             why)",
            p.model, p.source
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
    let demand = rules(sem).demand(p, best, job.gpus, cluster);
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
        kinds,
    })
}

/// The job's profile on each kind of the cluster (a stated fallback's where its model has
/// none of a kind) and its kinds by comparative advantage; `None` where the cluster names no
/// kinds.
fn kind_profiles(
    job: &JobSpec,
    cluster: &Cluster,
    profiles: &ProfileSet,
) -> Result<Option<Box<JobKinds>>, ReplayError> {
    let have = profiles.kinds_of(&job.model);
    if cluster.kinds.is_empty() {
        if have.len() > 1 {
            return Err(ReplayError::Profile(format!(
                "model {} has matrices of {} machine kinds ({}): name each group's \
                 machine_kind in the cluster so the replay knows which servers each is for",
                job.model,
                have.len(),
                have.join(", ")
            )));
        }
        return Ok(None);
    }
    let fallback = cluster.spec.kind_fallback.as_deref();
    let mut per_kind = Vec::with_capacity(cluster.kinds.len());
    for kind in &cluster.kinds {
        let i = (profiles.lookup_kind(&job.model, kind))
            .or_else(|| fallback.and_then(|f| profiles.lookup_kind(&job.model, f)))
            .ok_or_else(|| {
                ReplayError::Profile(format!(
                    "model {} (job {}) has no matrix of machine kind {kind}, which the cluster's \
                     servers are; its matrices are of {}: sweep it on a server of that kind, or \
                     name a kind whose matrix stands in (kind_fallback / --kind-fallback)",
                    job.model,
                    job.id,
                    have.join(", ")
                ))
            })?;
        per_kind.push(u32::try_from(i).unwrap_or(u32::MAX));
    }
    let order = advantage_order(&per_kind, cluster, profiles);
    Ok(Some(Box::new(JobKinds {
        profiles: per_kind,
        order,
    })))
}

/// A profile's rate on kind `k` at the share of that kind's first server, over its rate at the
/// reference (first) server's share.
fn speed_on(p: &Profile, cluster: &Cluster, k: usize, reference: &Profile) -> f64 {
    let share = |kind: usize| {
        (cluster.servers.iter())
            .find(|s| s.kind as usize == kind)
            .map_or((0.0, 0.0), |s| s.share_per_gpu())
    };
    let (c, m) = share(k);
    let (rc, rm) = cluster.reference_share();
    let base = reference.per_gpu(rc, rm, Semantics::Exact);
    if base > 0.0 {
        p.per_gpu(c, m, Semantics::Exact) / base
    } else {
        0.0
    }
}

/// The kinds by comparative advantage: the job's speed on a kind over the geometric mean of
/// that speed over every model with a matrix of each kind, most first (ties: cluster order).
fn advantage_order(per_kind: &[u32], cluster: &Cluster, profiles: &ProfileSet) -> Vec<u16> {
    let reference = cluster.servers[0].kind as usize;
    let mut models: Vec<&str> = profiles.profiles.iter().map(|p| p.model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    let typical: Vec<f64> = (0..cluster.kinds.len())
        .map(|k| {
            let logs: Vec<f64> = (models.iter())
                .filter_map(|m| {
                    let on = profiles.lookup_kind(m, &cluster.kinds[k])?;
                    let at = profiles.lookup_kind(m, &cluster.kinds[reference])?;
                    let x = speed_on(profiles.get(on), cluster, k, profiles.get(at));
                    (x > 0.0).then(|| x.ln())
                })
                .collect();
            if logs.is_empty() {
                1.0
            } else {
                (logs.iter().sum::<f64>() / logs.len() as f64).exp()
            }
        })
        .collect();
    let reference_profile = profiles.get(per_kind[reference] as usize);
    let advantage: Vec<f64> = (0..cluster.kinds.len())
        .map(|k| {
            speed_on(
                profiles.get(per_kind[k] as usize),
                cluster,
                k,
                reference_profile,
            ) / typical[k]
        })
        .collect();
    let mut order: Vec<u16> = (0..cluster.kinds.len() as u16).collect();
    order.sort_by(|&a, &b| advantage[b as usize].total_cmp(&advantage[a as usize]));
    order
}
