use super::{MechCtx, MechStats, Mechanism, Order, Placement, best_on, place_in_order};

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
        order: &mut Order,
        out: &mut Vec<Placement>,
        _: &mut MechStats,
    ) {
        place_in_order(ctx, order, out, |j, s| best_on(ctx, j, s));
    }
}
