//! ONES (SC'21) and its improvements, one change each, on the shared evolutionary search
//! ([`super::evolution`]); see docs/findings/ones-search.md ("ONES", "Improvements over ONES").

use super::ElasticPolicy;
use super::evolution::{Evolution, Variant};

/// ONES as its artifact does it.
pub const ONES: Variant = Variant::ONES;
/// Fitness counts queued jobs (estimated sum of completion times, shortest first).
pub const QUEUE: Variant = Variant {
    name: "ones+queue",
    queue_aware: true,
    ..ONES
};
/// Mutation also moves GPUs between executed jobs.
pub const MUTATE: Variant = Variant {
    name: "ones+mutate",
    move_mutation: true,
    ..ONES
};
/// Global batch chosen by goodput instead of the job's rule.
pub const BATCH: Variant = Variant {
    name: "ones+batch",
    free_batch: true,
    ..ONES
};
/// The progress predictor's mean instead of a fresh sample per generation.
pub const MEAN: Variant = Variant {
    name: "ones+mean",
    mean_predictor: true,
    ..ONES
};
/// Only the jobs inside their first epoch since a change are held, instead of ONES's global
/// gate (which holds every change of a decision that would touch one of them).
pub const PIN: Variant = Variant {
    name: "ones+pin",
    global_gate: false,
    ..ONES
};
/// All four improvements.
pub const PLUS: Variant = Variant {
    name: "ones-plus",
    queue_aware: true,
    move_mutation: true,
    free_batch: true,
    mean_predictor: true,
    resources: false,
    global_gate: true,
};

pub fn ones(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(ONES, seed))
}
pub fn ones_queue(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(QUEUE, seed))
}
pub fn ones_mutate(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(MUTATE, seed))
}
pub fn ones_batch(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(BATCH, seed))
}
pub fn ones_mean(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(MEAN, seed))
}
pub fn ones_pin(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(PIN, seed))
}
pub fn ones_plus(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(PLUS, seed))
}
