use super::{Policy, PolicyCtx};
use crate::replay::job::JobState;
use crate::replay::profile::Semantics;

/// Finish-time fairness (Themis): rho = estimated shared finish time / ideal finish time, where
/// shared = elapsed + remaining at the proportional share and ideal = whole run at the
/// proportional share x current contention. Largest rho runs first.
pub struct Ftf;

impl Policy for Ftf {
    fn name(&self) -> &'static str {
        "ftf"
    }
    /// Under `--semantics synergy`: Synergy's `finish_time_fair_metric`, (now - arrival +
    /// remaining time) / (whole run at the proportional share), smallest first.
    fn key(&self, job: &JobState, ctx: &PolicyCtx) -> f64 {
        if ctx.semantics == Semantics::Synergy {
            let sc = &job.synergy;
            let ideal = sc.iter_s * sc.total_iters as f64;
            return (ctx.now - job.spec.arrival_s + sc.remaining_s(ctx.fair)) / ideal;
        }
        let shared = (ctx.now - job.spec.arrival_s) + job.remaining / job.prop_rate;
        let ideal = job.spec.work_samples / job.prop_rate * ctx.contention;
        -(shared / ideal)
    }
}
