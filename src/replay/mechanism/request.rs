use super::{MechCtx, MechStats, Mechanism, Order, Placement, place_in_order};

/// As requested: each job gets the CPUs and memory its trace asked for (Alibaba pods carry
/// requests), capped at one server's capacity; a job without requests gets its proportional
/// share, and so does a job that requested none of a resource (a best-effort pod asking 0 MiB
/// would otherwise never progress). This is what a request-based scheduler (Kubernetes) gives
/// the same jobs: the baseline to hold sensitivity-aware mechanisms against on such traces.
pub struct Request;

impl Mechanism for Request {
    fn name(&self) -> &'static str {
        "request"
    }
    fn allocate(
        &self,
        ctx: &MechCtx,
        order: &mut Order,
        out: &mut Vec<Placement>,
        _: &mut MechStats,
    ) {
        place_in_order(ctx, order, out, |j, s| {
            let (share_cpus, share_mem) = ctx.proportional(j, s);
            let job = &ctx.jobs[j].spec;
            let server = &ctx.cluster.servers[s];
            let asked = |r: Option<f64>, share: f64| r.filter(|r| *r > 0.0).unwrap_or(share);
            (
                asked(job.cpu_request, share_cpus).min(server.cpus),
                asked(job.mem_request_gb, share_mem).min(server.mem_gb),
            )
        });
    }
}
