//! The profiling harness, one folder a concern:
//!
//! - [`cgroup`]: the caps (CPU quota and set, memory limit, storage throttle, freezer), cgroup
//!   v1 and v2 behind one trait, and what a killed profiler left behind;
//! - [`process`]: starting the job's command, its process tree, CPU affinity, a
//!   pseudo-terminal, signals;
//! - [`measure`]: reading the job's progress from its own output, steady state, the rhythm of
//!   its reports, other load on its CPUs, the machine's CPU speed, GPU telemetry;
//! - [`memory`]: the dataset, the page cache, resident memory, the order files are opened,
//!   re-reading the dataset under a smaller cache, and the cells the cache model fills in;
//! - [`sweep`]: the sweep that ties them together (its plan, CPU search, launches, blocks,
//!   the live check, and the Slurm fleet);
//! - [`validate`]: modelled cells measured after the fact.

pub mod cgroup;
pub mod measure;
pub mod memory;
pub mod process;
pub mod sweep;
pub mod validate;
