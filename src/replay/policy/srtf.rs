use super::{Policy, PolicyCtx};
use crate::replay::engine::JobState;

/// Shortest remaining time first; remaining time is estimated at the proportional share
/// (what a GPU-only scheduler knows).
pub struct Srtf;

impl Policy for Srtf {
    fn name(&self) -> &'static str {
        "srtf"
    }
    fn key(&self, job: &JobState, _: &PolicyCtx) -> f64 {
        job.remaining / job.prop_rate
    }
}
