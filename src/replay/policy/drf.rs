use super::{Policy, PolicyCtx};
use crate::replay::job::JobState;

/// Dominant resource fairness over time, one job per user: the job that has received the least
/// dominant-share-seconds (per round, its largest share of cluster GPUs, CPUs or memory) goes
/// first; newcomers tie at 0 and go by arrival.
pub struct Drf;

impl Policy for Drf {
    fn name(&self) -> &'static str {
        "drf"
    }
    fn key(&self, job: &JobState, _: &PolicyCtx) -> f64 {
        job.attained_dominant_s
    }
}
