use super::{Policy, PolicyCtx};
use crate::replay::engine::JobState;

/// First in, first out.
pub struct Fifo;

impl Policy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn key(&self, job: &JobState, _: &PolicyCtx) -> f64 {
        job.spec.arrival_s
    }
}
