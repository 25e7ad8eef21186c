//! The profiling harness: caps, launching, measuring, sweeping.

pub mod gpu;
