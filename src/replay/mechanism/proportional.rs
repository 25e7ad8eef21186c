use super::{MechCtx, MechStats, Mechanism, Order, Placement, place_in_order};

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
        order: &mut Order,
        out: &mut Vec<Placement>,
        _: &mut MechStats,
    ) {
        place_in_order(ctx, order, out, |j, s| ctx.proportional(j, s));
    }
    fn synergy_fair(&self) -> bool {
        true
    }
}
