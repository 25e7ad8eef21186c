use super::{KeyUpdate, Policy, PolicyCtx};
use crate::replay::job::JobState;
use crate::replay::profile::Semantics;

/// Least attained service (Tiresias-style, without queues): GPU-seconds received so far.
pub struct Las;

impl Policy for Las {
    fn name(&self) -> &'static str {
        "las"
    }
    fn key_update(&self, _: Semantics) -> KeyUpdate {
        KeyUpdate::WhenRun
    }
    /// Under `--semantics synergy` too: Synergy's `attained_service_time x gpu_demand` counts
    /// whole rounds run, as `attained_gpu_s` does there.
    fn key(&self, job: &JobState, _: &PolicyCtx) -> f64 {
        job.attained_gpu_s
    }
    fn synergy_selected_only(&self) -> bool {
        true
    }
}
