//! Command-line definition. Each subcommand's arguments turn into the options struct of the
//! library module that does the work.

use crate::harness::sweep::SweepOptions;
use crate::spec::{LoadedSpec, MemoryAxis, SweepMode};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "profiler",
    version,
    about = "Profile deep-learning training jobs under CPU and memory caps into throughput matrices",
    long_about = "Profile deep-learning training jobs under real cgroup CPU and memory caps into \
CPU x memory throughput matrices (Synergy-style optimistic profiling), inspect them, and replay \
cluster schedules with them offline.\n\n\
Start with:\n  profiler sweep --job workloads/input-pipeline.toml\n  profiler show matrices/input-pipeline.matrix.jsonl\n  \
profiler replay --compare fifo+proportional,fifo+tune,fifo+opt"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a job under each CPU (and memory) cap of its spec and write its throughput matrix.
    #[command(
        long_about = "Run a job under each CPU (and memory) cap of its spec and write its \
throughput matrix.\n\n\
The job is started under a cgroup of its own (below /profiler), warmed up, and measured until \
its throughput is steady. By default (memory = \"model\") only the CPU axis is measured, at the \
largest memory level, and the memory axis is filled by the MinIO cache model; every cell says \
whether it was measured or modelled. In live mode (the default where valid) a running job is \
re-capped from one level to the next instead of being restarted.\n\n\
Cells are appended to the matrix file as they finish: after Ctrl-C or a crash, run the same \
command with --resume to finish the rest.\n\n\
Needs root and the cpu, cpuset and memory cgroup controllers (v1 or v2). Use --no-caps to run \
the spec once, uncapped, as any user, to check that it starts and reports progress.\n\n\
Examples:\n  profiler sweep --job workloads/input-pipeline.toml\n  \
profiler sweep --job workloads/resnet18.toml --mode relaunch --memory measure\n  \
profiler sweep --job workloads/resnet18.toml --resume\n  \
profiler sweep --job workloads/my-job.toml --no-caps"
    )]
    Sweep(SweepArgs),
    /// Print a matrix file as CPU x memory tables.
    Show(ShowArgs),
    /// Replay a cluster schedule (trace or synthetic arrivals) with Synergy's policies and
    /// mechanisms, and report JCT, makespan and utilisation.
    // Boxed: the replay options are far larger than the other commands' (clippy
    // `large_enum_variant`).
    Replay(Box<crate::replay::cli::ReplayArgs>),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Re-cap one running job from level to level (memory only downwards).
    Live,
    /// Start the job afresh for every cell.
    Relaunch,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum MemoryArg {
    /// Measure the CPU axis, fill the memory axis with the cache model.
    Model,
    /// Measure every memory level.
    Measure,
}

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Job spec (TOML); see docs/JOB_SPEC.md and workloads/*.toml.
    #[arg(long, short = 'j', value_name = "SPEC.toml")]
    pub job: PathBuf,
    /// Matrix file to write [default: matrices/<job name>.matrix.jsonl].
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Keep the cells already in the output file and measure only the missing ones.
    #[arg(long)]
    pub resume: bool,
    /// Run the spec once without cgroup caps (no root needed) to check it; writes no matrix.
    #[arg(long)]
    pub no_caps: bool,
    /// Override the spec's sweep.mode.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Override the spec's sweep.memory.
    #[arg(long, value_enum)]
    pub memory: Option<MemoryArg>,
    /// Parent cgroup the runs are created under (one path component).
    #[arg(long, default_value = "profiler", value_name = "NAME")]
    pub cgroup_parent: String,
}

impl SweepArgs {
    pub fn into_options(self, spec: LoadedSpec) -> SweepOptions {
        let output = self
            .output
            .unwrap_or_else(|| PathBuf::from(format!("matrices/{}.matrix.jsonl", spec.spec.name)));
        SweepOptions {
            spec,
            output,
            resume: self.resume,
            caps: !self.no_caps,
            mode: self.mode.map(|m| match m {
                ModeArg::Live => SweepMode::Live,
                ModeArg::Relaunch => SweepMode::Relaunch,
            }),
            memory_axis: self.memory.map(|m| match m {
                MemoryArg::Model => MemoryAxis::Model,
                MemoryArg::Measure => MemoryAxis::Measure,
            }),
            cgroup_parent: self.cgroup_parent,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// A `*.matrix.jsonl` file.
    pub file: PathBuf,
    /// Print the cells as JSON lines instead of tables.
    #[arg(long, conflicts_with = "cells")]
    pub json: bool,
    /// Print one line per cell with everything it measured: interval, iteration times, CPU
    /// used, throttling, resident memory, page cache, storage reads, GPU telemetry.
    #[arg(long)]
    pub cells: bool,
}
