//! `profiler`: profile deep-learning training jobs under real CPU and memory caps into
//! throughput sensitivity matrices, replay cluster schedules offline, and deploy a replay's
//! schedule on real jobs.
//!
//! The binary (`src/main.rs`) only parses arguments; everything else lives here.

#![warn(clippy::too_many_lines)]

pub mod cache_model;
pub mod cli;
pub mod deploy;
pub mod doctor;
pub mod export;
pub mod harness;
pub mod machine;
pub mod matrix;
pub mod output;
pub mod plot;
pub mod predict;
pub mod replay;
pub mod report;
pub mod slurm;
pub mod spec;
pub mod stats;
pub mod units;

/// What the library's unit tests and the integration tests share.
#[doc(hidden)]
pub mod test_support {
    /// Whether CI is set (to anything but empty, `false` or `0`): there a test that would skip
    /// for want of root, a controller or Slurm fails instead.
    pub fn under_ci() -> bool {
        std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
    }
}
