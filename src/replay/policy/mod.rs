//! Scheduling policies: each orders the active jobs of a round (lowest key first; ties by
//! arrival, then id). A policy is one small file implementing [`Policy`], registered in
//! [`ALL`].

mod drf;
mod fifo;
mod ftf;
mod las;
mod srtf;
mod tetris;

use super::cluster::Cluster;
use super::job::JobState;
use super::profile::Semantics;

/// What a policy may look at besides the job.
pub struct PolicyCtx<'a> {
    pub now: f64,
    pub cluster: &'a Cluster,
    /// max(1, GPUs demanded by active jobs / cluster GPUs).
    pub contention: f64,
    /// Fraction of (GPU, CPU, memory) left unallocated in the previous round.
    pub free_frac: [f64; 3],
    pub semantics: Semantics,
    /// The mechanism ignores speed-ups (Synergy's `+fair` mode, i.e. proportional): Synergy's
    /// remaining-time keys then do not divide by the job's speed-up.
    pub fair: bool,
}

/// When a policy's key of a job can change, which decides how much of the queue the engine
/// re-keys each round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUpdate {
    /// Never: the key depends on the job as it arrived (and the cluster) only.
    Static,
    /// Only in a round the job runs, or the round after it last ran (its progress, attained
    /// service or carried speed-up changed). The key must not read [`PolicyCtx::now`],
    /// [`PolicyCtx::contention`] or [`PolicyCtx::free_frac`].
    WhenRun,
    /// Any round: every active job is re-keyed and the queue re-sorted.
    EveryRound,
}

pub trait Policy: Send + Sync {
    fn name(&self) -> &'static str;
    /// Priority key: lower runs first.
    fn key(&self, job: &JobState, ctx: &PolicyCtx) -> f64;
    /// When [`Policy::key`] of a job can change under `semantics`.
    fn key_update(&self, _semantics: Semantics) -> KeyUpdate {
        KeyUpdate::EveryRound
    }
    /// Whether Synergy's starvation priority comes before the key (under `--semantics
    /// synergy`; every Synergy scheduler but FIFO sorts by `-priority` first).
    fn uses_priority(&self) -> bool {
        true
    }
    /// Whether, under `--semantics synergy`, the mechanism sees only the jobs the round selects
    /// (in order, while their GPUs fit the cluster's free count), largest GPU demand first under
    /// Tune, as Synergy's LAS does; its other schedulers offer every job (backfilling).
    fn synergy_selected_only(&self) -> bool {
        false
    }
    /// A plug-in policy's first failure (its code raised, or gave a key that is not a
    /// number): the engine stops the replay with it after the round. Built-ins never fail.
    fn failure(&self) -> Option<String> {
        None
    }
}

type Ctor = fn() -> Box<dyn Policy>;

/// Every policy: (name, one-line description, constructor).
pub const ALL: &[(&str, &str, Ctor)] = &[
    ("fifo", "first in, first out (arrival time)", || {
        Box::new(fifo::Fifo)
    }),
    (
        "srtf",
        "shortest remaining time first (at the proportional share)",
        || Box::new(srtf::Srtf),
    ),
    (
        "las",
        "least attained service (GPU-seconds received)",
        || Box::new(las::Las),
    ),
    (
        "ftf",
        "finish-time fairness (Themis): largest estimated rho first",
        || Box::new(ftf::Ftf),
    ),
    (
        "drf",
        "dominant resource fairness: least dominant-share-seconds received",
        || Box::new(drf::Drf),
    ),
    (
        "tetris",
        "Tetris: best alignment of best-case demand with free resources, minus remaining time",
        || Box::new(tetris::Tetris),
    ),
];

pub fn by_name(name: &str) -> Option<Box<dyn Policy>> {
    ALL.iter().find(|p| p.0 == name).map(|p| (p.2)())
}

pub fn names() -> String {
    ALL.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
}
