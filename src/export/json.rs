//! `--format json`: the matrices in the project's schema (header and cells exactly as in a
//! `*.matrix.jsonl` file), pretty-printed, each with its best-case demand. One JSON array, one
//! element per input; each element also deserializes as a [`crate::matrix::Matrix`].

use super::{Artifact, ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered};
use crate::matrix::{Cell, Matrix, MatrixHeader};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One element of the exported array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedMatrix {
    /// The matrix file it was read from.
    pub file: String,
    pub header: MatrixHeader,
    pub cells: Vec<Cell>,
    pub demand: DemandRecord,
}

impl ExportedMatrix {
    pub fn matrix(&self) -> Matrix {
        Matrix {
            header: self.header.clone(),
            cells: self.cells.clone(),
        }
    }
}

/// The best-case demand and what it was computed for. Per GPU; GB are 1e9 bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DemandRecord {
    /// Server shape `CPUS:GPUS:GB` whose GPU-proportional share the speed-up is relative to.
    pub server: String,
    pub eps: f64,
    pub cpu_weight: f64,
    pub mem_weight: f64,
    /// Parameter combination the demand is for (the first; empty when the matrix has none).
    pub params: BTreeMap<String, String>,
    pub cpus_per_gpu: f64,
    pub mem_gb_per_gpu: f64,
    pub samples_per_s_per_gpu: f64,
    pub best_samples_per_s_per_gpu: f64,
    pub proportional_samples_per_s_per_gpu: f64,
    /// `null` when the proportional share has no throughput.
    pub speedup_over_proportional: Option<f64>,
    /// Other allocations `[cpus_per_gpu, mem_gb_per_gpu]` the blocks cannot tell apart from
    /// the demand (their relative intervals overlap); absent without relative rates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alike: Vec<[f64; 2]>,
}

impl DemandRecord {
    fn new(p: &Prepared, opts: &ExportOptions) -> Result<Self, ExportError> {
        let d = &p.demand;
        Ok(DemandRecord {
            server: opts.server.to_string(),
            eps: d.eps,
            cpu_weight: opts.weights.cpu,
            mem_weight: opts.weights.mem,
            params: p.surface.params.clone(),
            cpus_per_gpu: p.finite("demand cpus_per_gpu", d.cpus_per_gpu)?,
            mem_gb_per_gpu: p.finite("demand mem_gb_per_gpu", d.mem_gb_per_gpu)?,
            samples_per_s_per_gpu: p.finite("demand samples/s", d.samples_per_s_per_gpu)?,
            best_samples_per_s_per_gpu: p.finite("best samples/s", d.best_samples_per_s_per_gpu)?,
            proportional_samples_per_s_per_gpu: p.finite(
                "proportional samples/s",
                d.proportional_samples_per_s_per_gpu,
            )?,
            speedup_over_proportional: (d.proportional_samples_per_s_per_gpu > 0.0)
                .then(|| p.finite("speed-up", d.speedup_over_proportional))
                .transpose()?,
            alike: d.alike.clone(),
        })
    }
}

pub struct Json;

impl Exporter for Json {
    fn layout(&self) -> Layout {
        Layout::File { binary: false }
    }

    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
        let out = matrices
            .iter()
            .map(|p| {
                Ok(ExportedMatrix {
                    file: p.path.display().to_string(),
                    header: p.matrix.header.clone(),
                    cells: p.matrix.cells.clone(),
                    demand: DemandRecord::new(p, opts)?,
                })
            })
            .collect::<Result<Vec<_>, ExportError>>()?;
        let mut text = serde_json::to_string_pretty(&out).map_err(|e| ExportError::Table {
            path: opts.output.clone().unwrap_or_else(|| "<stdout>".into()),
            message: format!("serializing JSON: {e}"),
        })?;
        text.push('\n');
        Ok(Rendered {
            artifacts: vec![Artifact::text("matrices.json", text)],
            notes: Vec::new(),
        })
    }
}

/// Reads a file written by `--format json`.
pub fn read_json(path: &Path) -> Result<Vec<ExportedMatrix>, ExportError> {
    let text = std::fs::read_to_string(path).map_err(ExportError::io(path))?;
    serde_json::from_str(&text).map_err(|e| {
        ExportError::unsupported(
            path,
            format!(
                "line {}: not a `profiler export --format json` file: {e}",
                e.line()
            ),
        )
    })
}
