//! Helpers the baselines share: the proportional CPU and memory share, a job's batch under its
//! own rule, goodput estimates and gang placement in priority order.

use super::super::super::cluster::Cluster;
use super::super::allocation::Allocation;
use super::super::job::{BatchRule, ElasticJob, ElasticJobSpec};
use super::super::model::AppModel;
use super::super::placement::FreePool;
use super::DecisionCtx;

/// Cores and GB per GPU that every server can give each of its GPUs: the smallest
/// proportional share over the servers (on a homogeneous cluster, the share).
pub fn proportional_share(cluster: &Cluster) -> (f64, f64) {
    cluster
        .servers
        .iter()
        .fold((f64::INFINITY, f64::INFINITY), |(c, m), s| {
            let (sc, sm) = s.share_per_gpu();
            (c.min(sc), m.min(sm))
        })
}

/// The job's global batch at `gpus` GPUs under its own rule; a batch-free job (whose rule the
/// scheduler would choose) runs `gpus` x its base batch, within its bounds.
pub fn own_batch(spec: &ElasticJobSpec, gpus: u32) -> u32 {
    spec.rule_batch(gpus).unwrap_or_else(|| {
        (gpus.max(1).saturating_mul(spec.base_batch)).clamp(spec.min_batch, spec.max_batch)
    })
}

/// Servers a consolidated placement of `gpus` GPUs spans (the fewest).
pub fn min_nodes(cluster: &Cluster, gpus: u32) -> u32 {
    gpus.div_ceil(cluster.max_server_gpus.max(1)).max(1)
}

/// Estimated progress per second (no noise) of `job` on `gpus` GPUs over `nodes` servers at
/// `batch`, with the proportional share.
pub fn goodput(
    model: &AppModel,
    job: &ElasticJob,
    gpus: u32,
    nodes: u32,
    batch: u32,
    share: (f64, f64),
) -> f64 {
    if gpus == 0 {
        return 0.0;
    }
    let raw = model.throughput_with(gpus, nodes, batch as f64 / gpus as f64, share.0, share.1);
    let eff = model.efficiency.efficiency(
        batch as f64,
        job.spec.base_batch as f64,
        job.progress_frac(),
    );
    let g = raw * eff;
    if g.is_finite() && g > 0.0 { g } else { 0.0 }
}

/// The GPUs a non-elastic (gang) scheduler runs `spec` on: what it asked for, no more than its
/// batch has samples.
pub fn gang_gpus(spec: &ElasticJobSpec) -> u32 {
    let g = spec.requested_gpus.max(1);
    match spec.batch_rule {
        BatchRule::Fixed(_) | BatchRule::LinearScaling { .. } => g.min(own_batch(spec, g)).max(1),
        BatchRule::Free => g.min(spec.max_batch).max(1),
    }
}

/// Places jobs with the given GPU counts in priority `order` (indices into `ctx.jobs`; a
/// count of 0 or a job missing from `order` stays queued). `preemptive`: a running job not
/// placed is preempted; otherwise running jobs keep their allocations and only queued jobs
/// are placed (skipping those that do not fit: backfill). Running jobs keep their servers when
/// they can: the set that runs is chosen in priority order, then placed with the jobs that
/// keep their servers first, so a new job does not push a running one to other servers.
pub fn place_in_order(
    ctx: &DecisionCtx,
    order: &[usize],
    gpus: &dyn Fn(usize) -> u32,
    preemptive: bool,
) -> Vec<Option<Allocation>> {
    let batch = |i: usize, servers: &[(usize, u32)]| own_batch_on(ctx, i, servers);
    place_with_batch(ctx, order, gpus, &batch, preemptive)
}

/// Job `i`'s own batch on these (server, GPUs), at least one sample per GPU.
pub fn own_batch_on(ctx: &DecisionCtx, i: usize, servers: &[(usize, u32)]) -> u32 {
    let g = servers.iter().map(|&(_, g)| g).sum::<u32>();
    own_batch(&ctx.jobs[i].spec, g).max(g)
}

/// The global batch of job `i` on these (server, GPUs).
pub type BatchFn<'a> = dyn Fn(usize, &[(usize, u32)]) -> u32 + 'a;

/// [`place_in_order`] with the global batch chosen by `batch(job, servers)`.
pub fn place_with_batch(
    ctx: &DecisionCtx,
    order: &[usize],
    gpus: &dyn Fn(usize) -> u32,
    batch: &BatchFn,
    preemptive: bool,
) -> Vec<Option<Allocation>> {
    let share = proportional_share(ctx.cluster);
    let alloc_for = |i: usize, _g: u32, servers: Vec<(usize, u32)>| Allocation {
        global_batch: batch(i, &servers),
        gpus_per_server: servers,
        cpus_per_gpu: share.0,
        mem_gb_per_gpu: share.1,
    };
    let mut out: Vec<Option<Allocation>> = vec![None; ctx.jobs.len()];
    let mut pool = FreePool::new(ctx.cluster);
    if !preemptive {
        for (i, j) in ctx.jobs.iter().enumerate() {
            if let Some(a) = &j.allocation {
                let a = Allocation {
                    cpus_per_gpu: share.0,
                    mem_gb_per_gpu: share.1,
                    ..a.clone()
                };
                pool.take(&a);
                out[i] = Some(a);
            }
        }
    }
    // First pass: who runs, placing in priority order.
    let mut first = pool.clone();
    let mut chosen = Vec::new();
    let mut first_out = out.clone();
    for &i in order {
        if out[i].is_some() {
            continue;
        }
        let g = gpus(i);
        if g == 0 {
            continue;
        }
        let keep = ctx.jobs[i]
            .allocation
            .as_ref()
            .map(|a| a.gpus_per_server.as_slice());
        if let Some(servers) = first.place(g, share.0, share.1, keep) {
            let a = alloc_for(i, g, servers);
            first.take(&a);
            first_out[i] = Some(a);
            chosen.push(i);
        }
    }
    // Second pass: the chosen running jobs keep their servers, then the rest are placed.
    let mut second = pool;
    let mut second_out = out;
    let (keepers, movers): (Vec<usize>, Vec<usize>) = chosen
        .iter()
        .partition(|&&i| ctx.jobs[i].allocation.is_some());
    for i in keepers.into_iter().chain(movers) {
        let g = gpus(i);
        let keep = ctx.jobs[i]
            .allocation
            .as_ref()
            .map(|a| a.gpus_per_server.as_slice());
        match second.place(g, share.0, share.1, keep) {
            Some(servers) => {
                let a = alloc_for(i, g, servers);
                second.take(&a);
                second_out[i] = Some(a);
            }
            None => return first_out,
        }
    }
    second_out
}

/// Places GPU counts as Pollux's simulator places Tiresias and Optimus: a running job whose
/// count is unchanged keeps its servers; the others, in `order`, take GPUs from the servers
/// with the most room ([`FreePool::place_most_free`]). A job with a count of 0, missing from
/// `order`, or that no longer fits, stays queued (a running one is preempted).
pub fn place_most_free_keeping(
    ctx: &DecisionCtx,
    counts: &[u32],
    order: &[usize],
    batch: &BatchFn,
) -> Vec<Option<Allocation>> {
    let share = proportional_share(ctx.cluster);
    let alloc_for = |i: usize, servers: Vec<(usize, u32)>| Allocation {
        global_batch: batch(i, &servers),
        gpus_per_server: servers,
        cpus_per_gpu: share.0,
        mem_gb_per_gpu: share.1,
    };
    let mut out: Vec<Option<Allocation>> = vec![None; ctx.jobs.len()];
    let mut pool = FreePool::new(ctx.cluster);
    for (i, j) in ctx.jobs.iter().enumerate() {
        let Some(a) = &j.allocation else { continue };
        if counts[i] > 0 && a.gpus() == counts[i] && pool.fits(&a.gpus_per_server, share.0, share.1)
        {
            let a = alloc_for(i, a.gpus_per_server.clone());
            pool.take(&a);
            out[i] = Some(a);
        }
    }
    for &i in order {
        if out[i].is_some() || counts[i] == 0 {
            continue;
        }
        if let Some(servers) = pool.place_most_free(counts[i], share.0, share.1) {
            let a = alloc_for(i, servers);
            pool.take(&a);
            out[i] = Some(a);
        }
    }
    out
}
