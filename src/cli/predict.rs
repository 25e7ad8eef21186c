//! Command-line arguments of `profiler predict` (wired into the binary by `main.rs`).

use std::path::{Path, PathBuf};

pub const LONG_ABOUT: &str = "\
Predict a job's whole matrix from a few measured cells and the jobs already profiled.

The partial matrix is a sweep of a few CPU levels (the reference, the highest, among them). Each
library job's CPU curve is scaled and stretched along the CPU axis to fit the measured cells of
the top memory level; the jobs that fit best predict the rest, each cell with a 95% interval
that spans every shape the measured cells leave possible. Unmeasured cells are written with
source = \"predicted\"; the memory axis below them is the matrix's cache model's.

The library is the shipped zoo (Synergy's twelve models) and every matrix under each --library
folder: keep one folder per machine kind and add each finished sweep to it.

--evaluate judges the predictor on the library itself: each job held out in turn, its cells at
--given revealed, its other CPU levels predicted from the rest; then each measured one cell at a
time, the widest first, until every predicted cell is within --precision.

Examples:
  profiler predict new-job.matrix.jsonl --library matrices/library/vm --cpu 0.25,0.5,1,1.5,2
  profiler predict partial.matrix.jsonl --cpu 1,2,3,4,5,6,9,12,24 -o predicted.matrix.jsonl
  profiler predict --evaluate --given 3,24";

#[derive(Debug, Clone, clap::Args)]
pub struct PredictArgs {
    /// A matrix with some cells measured (at the top memory level).
    #[arg(value_name = "PARTIAL", required_unless_present = "evaluate")]
    pub partial: Option<PathBuf>,
    /// Folders (or files) of matrices of jobs already profiled, besides the shipped zoo.
    #[arg(long, value_name = "DIR")]
    pub library: Vec<PathBuf>,
    /// CPU levels of the whole matrix, besides the partial matrix's own (e.g. Synergy's grid,
    /// 1,2,3,4,5,6,9,12,24).
    #[arg(long, value_delimiter = ',', value_name = "CPUS", value_parser = parse_cpu)]
    pub cpu: Vec<f64>,
    /// Leave the shipped zoo out of the library.
    #[arg(long)]
    pub no_zoo: bool,
    /// Where to write the predicted matrix (default: PARTIAL with `.predicted` before
    /// `.matrix.jsonl`).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Judge the predictor on the library instead, each job held out in turn.
    #[arg(long, conflicts_with = "partial")]
    pub evaluate: bool,
    /// With --evaluate: the CPU levels revealed of each held-out job.
    #[arg(long, value_delimiter = ',', default_value = "3,24", value_name = "CPUS", value_parser = parse_cpu)]
    pub given: Vec<f64>,
    /// With --evaluate: the relative half-width the one-cell-at-a-time measurement stops at.
    #[arg(long, default_value_t = 0.05, value_name = "FRACTION", value_parser = super::parse_precision)]
    pub precision: f64,
}

pub(crate) fn parse_cpu(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|c| c.is_finite() && *c > 0.0)
        .ok_or_else(|| format!("{s:?}: expected a CPU level in cores, e.g. 0.5 or 24"))
}

impl PredictArgs {
    /// The output path: `--output`, else the partial's with `.predicted` before `.matrix.jsonl`.
    pub fn output_for(&self, partial: &Path) -> PathBuf {
        if let Some(o) = &self.output {
            return o.clone();
        }
        let name = partial
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let stem = name.strip_suffix(".matrix.jsonl").unwrap_or(&name);
        partial.with_file_name(format!("{stem}.predicted.matrix.jsonl"))
    }
}
