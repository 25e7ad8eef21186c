//! The job as processes: its command started under its caps, its process tree, CPU affinity,
//! a pseudo-terminal for jobs that draw bars only on one, and signals.

pub mod affinity;
pub mod job_launch;
pub mod launch;
pub mod signals;
pub mod terminal;
pub mod tree;
