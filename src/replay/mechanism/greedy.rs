use super::{Free, MechCtx, MechStats, Mechanism, Placement, best_on};

/// Greedy: each job in policy order gets its best-case CPU and memory (capped at one server's
/// capacity) on the best-fitting server, or waits this round.
pub struct Greedy;

impl Mechanism for Greedy {
    fn name(&self) -> &'static str {
        "greedy"
    }
    fn allocate(
        &self,
        ctx: &MechCtx,
        order: &[usize],
        out: &mut Vec<Placement>,
        _: &mut MechStats,
    ) {
        let mut free = Free::new(ctx.cluster);
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
                free.take(&p);
                out.push(p);
            }
        }
    }
}
