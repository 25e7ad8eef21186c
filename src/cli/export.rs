//! Command-line arguments of `profiler export` (wired into the binary by `main.rs`).

use crate::export::{CellChoice, ExportFormat, ExportOptions};
use crate::matrix::{CostWeights, DEFAULT_EPS, ServerShape};
use std::path::PathBuf;

pub const LONG_ABOUT: &str = "\
Write matrices in formats other tools read.

Each matrix gives its per-GPU throughput surface and its best-case demand: the cheapest grid
point (cost = cpu-weight x CPUs / proportional CPUs + mem-weight x GB / proportional GB) whose
throughput is within --eps of the best, and its speed-up over the GPU-proportional share of
--server. Several matrices can be exported at once.

Formats and what -o is:
  csv, parquet     one table, one row per cell of every matrix, every field, plus the demand (FILE)
  json             the matrices in the project's schema with their demand, one JSON array (FILE)
  synergy          <model>_1.py per matrix for Synergy's simulator: 9x5 tput table normalised
                   to the proportional share, best-case cpus/mem snapped to Synergy's grid (DIR)
  blox             the same for Blox: 9x4, no 20.83 GB column (DIR)
  synergy-profile  <job>/profile.json per matrix, Synergy's offline-profiler output (DIR)
  gavel            simulation_throughputs.json entries, steps/s at --cell (FILE)
  slurm            profiler_demands.csv (--cpus-per-gpu, --mem-per-gpu per model) and a
                   job_submit.lua plugin that applies it to jobs whose comment names a model (DIR)
  kubernetes       container resources per model, requests = limits, whole CPUs (FILE)
A FILE of `-`, or none for the text formats, is stdout. Notes (values snapped to a grid, entries
left out) and the files written go to stderr.

Examples:
  profiler export matrices/zoo/*.matrix.jsonl --format synergy -o synergy-models/
  profiler export matrices/*.matrix.jsonl --format parquet -o cells.parquet
  profiler export matrices/zoo/resnet18.matrix.jsonl --format gavel --cell proportional
  profiler export matrices/zoo/*.matrix.jsonl --format slurm -o slurm/ \\
      --slurm-table /shared/slurm/profiler_demands.csv
  profiler export matrices/zoo/resnet18.matrix.jsonl --format kubernetes --cell 6,62.5
  profiler export m.matrix.jsonl --format synergy -o out/ --server 32:8:500 --eps 0.05

Details of every format: docs/EXPORT.md.";

#[derive(Debug, Clone, clap::Args)]
pub struct ExportArgs {
    /// Matrix files (`*.matrix.jsonl`).
    #[arg(required = true, value_name = "MATRIX")]
    pub matrices: Vec<PathBuf>,
    /// Output format.
    #[arg(long, short = 'f', value_enum)]
    pub format: ExportFormat,
    /// Output file or directory, depending on the format (see above); `-` is stdout.
    #[arg(long, short = 'o', value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Server shape whose GPU-proportional share is the reference (Synergy's default server).
    #[arg(long, default_value = "24:8:500", value_name = "CPUS:GPUS:GB")]
    pub server: ServerShape,
    /// Best-case demand: the cheapest grid point within this fraction of the best throughput.
    #[arg(long, default_value_t = DEFAULT_EPS, value_name = "E")]
    pub eps: f64,
    /// Weight of CPUs in the cost of a grid point.
    #[arg(long, default_value_t = 1.0, value_name = "W")]
    pub cpu_weight: f64,
    /// Weight of memory in the cost of a grid point.
    #[arg(long, default_value_t = 1.0, value_name = "W")]
    pub mem_weight: f64,
    /// Cell exported by gavel, slurm and kubernetes: `best` (the best-case demand),
    /// `proportional` (the share of --server), or CPUS,GB per GPU (interpolated off the grid).
    #[arg(long, default_value = "best", value_name = "best|proportional|CPUS,GB")]
    pub cell: CellChoice,
    /// Gavel worker type every throughput is filed under (default: each matrix under its
    /// machine kind, `v100` for a matrix that records none).
    #[arg(long, value_name = "TYPE")]
    pub gavel_worker: Option<String>,
    /// Path job_submit.lua reads the Slurm demand table from.
    #[arg(long, default_value = crate::export::slurm::DEFAULT_TABLE, value_name = "PATH")]
    pub slurm_table: String,
}

impl ExportArgs {
    pub fn into_options(self) -> ExportOptions {
        ExportOptions {
            matrices: self.matrices,
            format: self.format,
            output: self.output,
            server: self.server,
            eps: self.eps,
            weights: CostWeights {
                cpu: self.cpu_weight,
                mem: self.mem_weight,
            },
            cell: self.cell,
            gavel_worker: self.gavel_worker,
            slurm_table: self.slurm_table,
        }
    }
}
