//! `profiler`: profile deep-learning training jobs under real CPU and memory caps into
//! throughput sensitivity matrices, and replay cluster schedules offline.
//!
//! The binary (`src/main.rs`) only parses arguments; everything else lives here.

pub mod cache_model;
pub mod cli;
pub mod doctor;
pub mod export;
pub mod harness;
pub mod machine;
pub mod matrix;
pub mod output;
pub mod plot;
pub mod replay;
pub mod spec;
