//! ONES's global update gate (its scheduler's `_update`): a decision that changes a running job
//! which has not completed an epoch since it was last (re)scheduled is not applied, except that
//! queued jobs whose GPUs are free now start.

use super::super::super::super::cluster::EPS;
use super::super::super::allocation::Allocation;
use super::super::DecisionCtx;

/// `decision` as ONES applies it.
pub(super) fn apply(
    ctx: &DecisionCtx,
    decision: Vec<Option<Allocation>>,
) -> Vec<Option<Allocation>> {
    let blocked = ctx.jobs.iter().zip(&decision).any(|(j, new)| {
        j.allocation.as_ref().is_some_and(|old| {
            let changes = new.as_ref().is_none_or(|a| !a.same_placement(old));
            changes && j.epochs_since_change() < 1.0
        })
    });
    if !blocked {
        return decision;
    }
    let mut free: Vec<(u32, f64, f64)> = (ctx.cluster.servers.iter())
        .map(|s| (s.gpus, s.cpus, s.mem_gb))
        .collect();
    let take = |free: &mut [(u32, f64, f64)], a: &Allocation| {
        for &(s, g) in &a.gpus_per_server {
            let f = &mut free[s];
            f.0 = f.0.saturating_sub(g);
            f.1 -= g as f64 * a.cpus_per_gpu;
            f.2 -= g as f64 * a.mem_gb_per_gpu;
        }
    };
    for a in ctx.jobs.iter().filter_map(|j| j.allocation.as_ref()) {
        take(&mut free, a);
    }
    ctx.jobs
        .iter()
        .zip(decision)
        .map(|(j, new)| {
            if j.allocation.is_some() {
                return j.allocation.clone();
            }
            let a = new?;
            let fits = a.gpus_per_server.iter().all(|&(s, g)| {
                let f = free[s];
                f.0 >= g
                    && f.1 + EPS >= g as f64 * a.cpus_per_gpu
                    && f.2 + EPS >= g as f64 * a.mem_gb_per_gpu
            });
            fits.then(|| {
                take(&mut free, &a);
                a
            })
        })
        .collect()
}
