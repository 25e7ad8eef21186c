//! Elastic schedulers: each is one file implementing [`ElasticPolicy`], registered in [`ALL`].
//! A policy sees the active jobs and the cluster and returns a whole decision; the engine
//! checks it ([`super::feasibility::check`]), applies it and charges reconfigurations.

pub mod evolution;
pub mod gang;
pub mod joint;
pub mod ones;
pub mod optimus;
pub mod pollux;
pub mod sampling;
pub mod support;
pub mod tiresias;

use super::super::cluster::Cluster;
use super::allocation::Allocation;
use super::job::ElasticJob;
use super::model::AppModels;

/// What a policy may look at.
pub struct DecisionCtx<'a> {
    pub now: f64,
    /// Active jobs (arrived, unfinished), ascending by id; each holds its current allocation.
    pub jobs: &'a [ElasticJob],
    pub cluster: &'a Cluster,
    pub models: &'a AppModels,
    /// Seconds until the next decision.
    pub interval_s: f64,
    /// Seconds of no progress charged when a job's allocation changes.
    pub reconfiguration_s: f64,
}

pub trait ElasticPolicy: Send {
    fn name(&self) -> &'static str;
    /// One entry per `ctx.jobs` entry (same order): the job's allocation until the next
    /// decision, `None` to leave it queued or preempt it.
    fn decide(&mut self, ctx: &DecisionCtx) -> Vec<Option<Allocation>>;
    /// Whether the scheduler resizes a running job in place (its workers re-form their group)
    /// rather than by checkpoint and restart; the engine then charges the rescale time.
    fn rescales_in_place(&self) -> bool {
        false
    }
    /// A plug-in policy's failure in its last decision (its code raised, or returned something
    /// that is not a decision): the engine stops the replay with it. Built-ins never fail.
    fn failure(&self) -> Option<String> {
        None
    }
}

/// Builds a policy from the replay's seed (policies that draw random numbers use only it).
pub type Ctor = fn(seed: u64) -> Box<dyn ElasticPolicy>;

/// Every elastic policy: (name, one-line description, constructor).
pub const ALL: &[(&str, &str, Ctor)] = &[
    (
        "fifo",
        "gang at the requested GPUs and own batch, arrival order, non-preemptive, backfilling",
        gang::fifo,
    ),
    (
        "srtf",
        "gang at the requested GPUs, shortest estimated remaining time first, preemptive",
        gang::srtf,
    ),
    (
        "las",
        "gang at the requested GPUs, least attained GPU-seconds first, preemptive",
        gang::las,
    ),
    (
        "tiresias",
        "Tiresias: 2D discretised LAS, 2 queues split at 16 GPU-hours, FIFO within, gang",
        tiresias::tiresias,
    ),
    (
        "optimus",
        "Optimus+Oracle-like: one GPU at a time to the largest drop of remaining time, own batch",
        optimus::optimus,
    ),
    (
        "pollux",
        "Pollux as its simulator: NSGA-II over jobs x servers, goodput-best batch, restart-penalised speed-up power mean",
        pollux::pollux,
    ),
    (
        "ones",
        "ONES (SC'21): online evolutionary search over GPU slots, batch by the job's rule",
        ones::ones,
    ),
    (
        "ones+queue",
        "ONES whose fitness also counts queued jobs (estimated sum of completion times)",
        ones::ones_queue,
    ),
    (
        "ones+mutate",
        "ONES whose mutation also moves GPUs between jobs (not only removes jobs)",
        ones::ones_mutate,
    ),
    (
        "ones+batch",
        "ONES with the batch size chosen by goodput instead of the job's rule",
        ones::ones_batch,
    ),
    (
        "ones+mean",
        "ONES with the progress predictor's mean instead of a fresh sample per generation",
        ones::ones_mean,
    ),
    (
        "ones+pin",
        "ONES holding only the jobs in their first epoch since a change, not every change (its global gate)",
        ones::ones_pin,
    ),
    (
        "ones-plus",
        "ONES with all four improvements (queue, mutate, batch, mean)",
        ones::ones_plus,
    ),
    (
        "joint",
        "ones-plus that also chooses each job's CPU and memory per GPU from its matrix",
        joint::joint,
    ),
    (
        "joint-resources",
        "CPU and memory per GPU searched, GPUs by the search, batch by the job's rule",
        joint::joint_resources,
    ),
];

/// Makes the policy named `name` for a run with `seed`; `None`: no such policy. The built-ins'
/// is [`by_name`]; a front end with policies of its own passes one that knows them too.
pub type Factory<'a> = dyn Fn(&str, u64) -> Option<Box<dyn ElasticPolicy>> + Sync + 'a;

pub fn by_name(name: &str, seed: u64) -> Option<Box<dyn ElasticPolicy>> {
    ALL.iter().find(|p| p.0 == name).map(|p| (p.2)(seed))
}

pub fn names() -> String {
    ALL.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
}
