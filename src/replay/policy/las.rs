use super::{Policy, PolicyCtx};
use crate::replay::job::JobState;

/// Least attained service (Tiresias-style, without queues): GPU-seconds received so far.
pub struct Las;

impl Policy for Las {
    fn name(&self) -> &'static str {
        "las"
    }
    fn key(&self, job: &JobState, _: &PolicyCtx) -> f64 {
        job.attained_gpu_s
    }
}
