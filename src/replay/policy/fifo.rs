use super::{KeyUpdate, Policy, PolicyCtx};
use crate::replay::job::JobState;
use crate::replay::profile::Semantics;

/// First in, first out.
pub struct Fifo;

impl Policy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn key_update(&self, _: Semantics) -> KeyUpdate {
        KeyUpdate::Static
    }
    fn key(&self, job: &JobState, _: &PolicyCtx) -> f64 {
        job.spec.arrival_s
    }
    fn uses_priority(&self) -> bool {
        false
    }
}
