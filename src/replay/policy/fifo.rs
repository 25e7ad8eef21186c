use super::{Policy, PolicyCtx};
use crate::replay::job::JobState;

/// First in, first out.
pub struct Fifo;

impl Policy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn key(&self, job: &JobState, _: &PolicyCtx) -> f64 {
        job.spec.arrival_s
    }
    fn uses_priority(&self) -> bool {
        false
    }
}
