use super::{KeyUpdate, Policy, PolicyCtx};
use crate::replay::job::JobState;
use crate::replay::profile::Semantics;

/// Shortest remaining time first; remaining time is estimated at the proportional share
/// (what a GPU-only scheduler knows). Under `--semantics synergy`: Synergy's
/// `remaining_duration`, remaining iterations x iteration time, divided by the speed-up the job
/// ran at in its last round unless the mechanism is proportional.
pub struct Srtf;

impl Policy for Srtf {
    fn name(&self) -> &'static str {
        "srtf"
    }
    /// Remaining work (and, under Synergy's semantics, the carried speed-up) changes only
    /// when the job runs, or the round after.
    fn key_update(&self, _: Semantics) -> KeyUpdate {
        KeyUpdate::WhenRun
    }
    fn key(&self, job: &JobState, ctx: &PolicyCtx) -> f64 {
        if ctx.semantics == Semantics::Synergy {
            return job.synergy.remaining_s(ctx.fair);
        }
        job.remaining / job.prop_rate
    }
}
