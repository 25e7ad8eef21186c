use super::{Free, MechCtx, MechStats, Mechanism, Placement};

/// GPU-proportional: each job gets CPUs and memory in proportion to its GPUs on its server.
/// Jobs go in policy order to the best-fitting server; a job that does not fit waits and later
/// jobs may still run (backfilling).
pub struct Proportional;

impl Mechanism for Proportional {
    fn name(&self) -> &'static str {
        "proportional"
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
            if let Some(s) = free.best_fit(g, |s| ctx.proportional(j, s)) {
                let (c, m) = ctx.proportional(j, s);
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
