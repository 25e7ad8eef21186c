use super::{Free, MechCtx, MechStats, Mechanism, Placement, best_on, reclaim_and_place};

/// Synergy-Tune. In policy order, each job gets its best-case demand on the best-fitting server
/// if it fits anywhere. Otherwise it gets its proportional share on a server with enough free
/// GPUs, after taking back CPU and memory from jobs already placed there above their own
/// proportional share (lowest priority first, down to their share). Because every placed job
/// then holds at most its share in each dimension, a job whose GPUs fit always fits: Tune
/// never runs fewer jobs than proportional.
pub struct Tune;

impl Mechanism for Tune {
    fn name(&self) -> &'static str {
        "tune"
    }
    fn allocate(
        &self,
        ctx: &MechCtx,
        order: &[usize],
        out: &mut Vec<Placement>,
        _: &mut MechStats,
    ) {
        let mut free = Free::new(ctx.cluster);
        let mut on_server: Vec<Vec<usize>> = vec![Vec::new(); ctx.cluster.servers.len()];
        for &j in order {
            if free.total_gpus == 0 {
                break;
            }
            let g = ctx.jobs[j].spec.gpus;
            if let Some(s) = free.best_fit(g, |s| best_on(ctx, j, s)) {
                let (c, m) = best_on(ctx, j, s);
                let p = Placement {
                    job: j,
                    server: s,
                    gpus: g,
                    cpus: c,
                    mem_gb: m,
                };
                on_server[s].push(free.place(out, p));
                continue;
            }
            reclaim_and_place(ctx, &mut free, &mut on_server, out, j);
        }
    }
}
