use super::{KeyUpdate, Policy, PolicyCtx};
use crate::replay::job::JobState;
use crate::replay::profile::Semantics;

/// Dominant resource fairness over time, one job per user: the job that has received the least
/// dominant-share-seconds (per round, its largest share of cluster GPUs, CPUs or memory) goes
/// first; newcomers tie at 0 and go by arrival.
pub struct Drf;

impl Policy for Drf {
    fn name(&self) -> &'static str {
        "drf"
    }
    fn key_update(&self, semantics: Semantics) -> KeyUpdate {
        match semantics {
            Semantics::Exact => KeyUpdate::WhenRun,
            Semantics::Synergy => KeyUpdate::Static,
        }
    }
    /// Under `--semantics synergy`: Synergy's DRF, a static sort by the job's dominant share of
    /// the cluster's GPUs, CPUs and memory in its best-case demand.
    fn key(&self, job: &JobState, ctx: &PolicyCtx) -> f64 {
        if ctx.semantics == Semantics::Synergy {
            let c = ctx.cluster;
            return (job.spec.gpus as f64 / c.total_gpus as f64)
                .max(job.best_cpu / c.total_cpus)
                .max(job.best_mem / c.total_mem_gb);
        }
        job.attained_dominant_s
    }
}
