use super::{KeyUpdate, Policy, PolicyCtx};
use crate::replay::job::JobState;
use crate::replay::profile::Semantics;

/// Tetris (SIGCOMM'14) as a cluster-level priority: alignment = dot product of the job's
/// best-case demand (as fractions of the cluster) with the fractions left free in the previous
/// round, combined with shortest-remaining-time as Tetris does (equal weight after
/// normalizing both to the round's scale). Highest score first.
pub struct Tetris;

impl Policy for Tetris {
    fn name(&self) -> &'static str {
        "tetris"
    }
    /// Exact: the alignment reads the last round's free fractions, so every round. Synergy's:
    /// the remaining time changes only when the job runs, or the round after.
    fn key_update(&self, semantics: Semantics) -> KeyUpdate {
        match semantics {
            Semantics::Exact => KeyUpdate::EveryRound,
            Semantics::Synergy => KeyUpdate::WhenRun,
        }
    }
    /// Under `--semantics synergy`: Synergy's Tetris, the remaining time weighted by the job's
    /// demand as fractions of the cluster (GPUs + CPUs + memory), smallest first.
    fn key(&self, job: &JobState, ctx: &PolicyCtx) -> f64 {
        let c = ctx.cluster;
        if ctx.semantics == Semantics::Synergy {
            let dur = job.synergy.remaining_s(ctx.fair);
            return job.spec.gpus as f64 / c.total_gpus as f64 * dur
                + job.best_cpu / c.total_cpus * dur
                + job.best_mem / c.total_mem_gb * dur;
        }
        let d = [
            job.spec.gpus as f64 / c.total_gpus as f64,
            job.best_cpu / c.total_cpus,
            job.best_mem / c.total_mem_gb,
        ];
        let align: f64 = d.iter().zip(ctx.free_frac).map(|(a, b)| a * b).sum();
        let remaining_h = job.remaining / job.prop_rate / 3600.0;
        -(align * 100.0) + remaining_h.ln_1p()
    }
}
