//! The profiling harness: caps (cgroups), launching the job, reading its progress, steady-state
//! measurement, telemetry, and the sweep that ties them together.

pub mod affinity;
pub mod cgroup;
pub mod cpu_search;
pub mod cpu_speed;
pub mod dataset;
pub mod fleet;
pub mod gpu;
pub mod interference;
pub mod job_launch;
pub mod launch;
pub mod model_fill;
pub mod open_trace;
pub mod page_cache;
mod plan;
pub mod process_tree;
pub mod progress;
pub mod read_replay;
pub mod resident;
pub mod rhythm;
pub mod signals;
pub mod steady;
pub mod sweep;
pub mod terminal;
pub mod validate;
