//! What a cell measures: the job's progress read from its own output, windows and steady
//! state, the rhythm of its reports, other load on its CPUs, the machine's CPU speed, and GPU
//! telemetry.

pub mod cpu_speed;
pub mod gpu;
pub mod host_probe;
pub mod interference;
pub mod job_output;
pub mod rhythm;
pub mod steady;
