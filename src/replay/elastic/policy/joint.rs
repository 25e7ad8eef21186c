//! The joint search: ONES's evolutionary search with every improvement, where a candidate also
//! carries each job's CPU and memory per GPU (a level per job, read from the job's matrix
//! through [`super::super::model::resources::ResourceModel`]), placed against every server's
//! cores and GB; and its CPU/memory-only counterpart (GPUs and batch by the job's rule).
//! See docs/findings/ones-search.md ("Joint batch x CPU x memory search").

use super::ElasticPolicy;
use super::evolution::{Evolution, Variant};
use super::ones::PLUS;

/// Batch x CPU x memory.
pub const JOINT: Variant = Variant {
    name: "joint",
    resources: true,
    ..PLUS
};
/// CPU and memory searched; the batch follows the job's rule.
pub const RESOURCES_ONLY: Variant = Variant {
    name: "joint-resources",
    free_batch: false,
    resources: true,
    ..PLUS
};

pub fn joint(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(JOINT, seed))
}
pub fn joint_resources(seed: u64) -> Box<dyn ElasticPolicy> {
    Box::new(Evolution::new(RESOURCES_ONLY, seed))
}
