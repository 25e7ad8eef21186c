//! Elastic replay: jobs whose GPU count and batch size change while they run (ONES, SC'21;
//! Pollux, OSDI'21), on one engine shared by every elastic scheduler, so that ONES, its
//! baselines and the joint batch x CPU x memory search run the same jobs on the same cluster.
//!
//! Layout (data modules first; the engine imports policies, never the reverse):
//! - [`job`]: what a trace gives about a job ([`job::ElasticJobSpec`]) and its state while it
//!   runs ([`job::ElasticJob`]);
//! - [`allocation`]: what a scheduler decides for one job ([`allocation::Allocation`]: GPUs per
//!   server, global batch, CPU and memory per GPU); [`feasibility`]: the check of a whole
//!   decision against the cluster;
//! - [`model`]: the calibrated job model: step time versus GPUs, servers and local batch
//!   (Pollux's model), statistical efficiency of a batch size, CPU/memory sensitivity;
//! - [`workload`]: trace adapters (ONES's trace, Pollux's workloads);
//! - [`placement`]: free resources per server and the shared placement rule;
//! - [`policy`]: one file per elastic scheduler behind [`policy::ElasticPolicy`];
//! - [`engine`]: the stepped simulation that applies decisions, charges reconfigurations and
//!   advances progress;
//! - [`bound`]: the least JCT the model allows a job (alone, best GPUs and batch throughout).
//!
//! See docs/REPLAY.md ("Elastic jobs") and docs/findings/ (elastic-model.md, ones-search.md,
//! pollux-fidelity.md) for the model, its calibration and every departure from ONES and Pollux.

pub mod allocation;
pub mod bound;
pub mod engine;
pub mod experiment;
pub mod feasibility;
pub mod job;
pub mod model;
pub mod placement;
pub mod policy;
pub mod workload;
