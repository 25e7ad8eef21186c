use super::{Policy, PolicyCtx};
use crate::replay::job::JobState;

/// Finish-time fairness (Themis): rho = estimated shared finish time / ideal finish time, where
/// shared = elapsed + remaining at the proportional share and ideal = whole run at the
/// proportional share x current contention. Largest rho runs first.
pub struct Ftf;

impl Policy for Ftf {
    fn name(&self) -> &'static str {
        "ftf"
    }
    fn key(&self, job: &JobState, ctx: &PolicyCtx) -> f64 {
        let shared = (ctx.now - job.spec.arrival_s) + job.remaining / job.prop_rate;
        let ideal = job.spec.work_samples / job.prop_rate * ctx.contention;
        -(shared / ideal)
    }
}
