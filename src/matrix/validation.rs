//! What `profiler validate` records in a matrix header: each cache model's predictions for
//! measured cells against the measurement, and the cells' telemetry against the model's
//! assumptions.

use super::CacheKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Measured cells compared with what each cache model predicts for them from the cell measured
/// at the top memory level of the same CPU level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// Seconds since the Unix epoch when the validation finished.
    pub created_unix_s: u64,
    /// Per model: error over the compared cells.
    pub models: Vec<ModelAccuracy>,
    pub cells: Vec<ValidationCell>,
    /// The median |error| a model that predicted every cell exactly would still show here,
    /// percent: what the spread between launches (`launch_spread`) alone gives. Absent where
    /// no cell was measured on several launches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_median_abs_error_pct: Option<f64>,
    /// Per model: the error of its predicted ratio to the top cell against the measured ratio
    /// of the pair ([`PairedRatio`]), over the cells that have one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paired_models: Vec<ModelAccuracy>,
    /// The pairs' median 95% half-width, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_median_half_width_pct: Option<f64>,
}

/// How close one cache model came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelAccuracy {
    pub model: CacheKind,
    /// Median over the compared cells of |predicted - measured| / measured, percent.
    pub median_abs_error_pct: f64,
    pub max_abs_error_pct: f64,
    pub cells: u32,
}

/// One measured cell and the models' predictions for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationCell {
    pub cpu: f64,
    pub memory_bytes: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    pub measured_samples_per_s: f64,
    /// Predicted samples/s by model name (`minio`, `page-cache`).
    pub predicted: BTreeMap<CacheKind, f64>,
    /// How far reruns alone may move this cell's error (95%, percent either way): the spread
    /// between launches over the launches behind this cell and behind the top cell its
    /// prediction scales. An error inside it cannot be told from the machine's noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_error_pct: Option<f64>,
    /// The model's assumptions against the cell's own telemetry, and which one is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CellCheck>,
    /// The cell over its top memory level, each relative to the reference of its own blocks,
    /// where the sweep measured in blocks: what a prediction's ratio to the top cell is judged
    /// against, steadier than the ratio of two launches' rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<PairedRatio>,
}

/// A validated cell's measured ratio to its top memory level, from their relative rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairedRatio {
    /// The cell's relative rate over its top cell's.
    pub measured_ratio: f64,
    /// 95% half-width of that ratio, percent: the two relative intervals combined.
    pub half_width_pct: f64,
    /// The top cell's rate, samples/s: a prediction over it is the model's ratio.
    pub top_samples_per_s: f64,
}

/// A validated cell's telemetry against what the cache model assumed for it
/// (`src/harness/validate/diagnosis.rs`): shares of the dataset and of reads, bytes/s, and the
/// CPU time per sample relative to the top memory level. Absent figures were not recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellCheck {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_share_measured: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_share_modelled: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_ratio_measured: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_ratio_modelled: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_bytes_per_s_measured: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_bytes_per_s_modelled: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_per_sample_vs_top: Option<f64>,
    /// What the model expects of `cpu_per_sample_vs_top`: more than 1 where the calibration
    /// cell showed what a read costs in CPU time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_per_sample_vs_top_modelled: Option<f64>,
    /// Of the CPU time each sample took beyond the top level's, the part the kernel spent
    /// (system time: faults, reads, reclaim); the rest is the job's own code (user time, such
    /// as threads that spin while they wait). Absent where a sample took no more CPU time or
    /// the cgroup does not tell system time apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_cpu_in_kernel: Option<f64>,
    /// The top cell's reference loop CPU time over this cell's: below 1 where the machine's
    /// CPUs ran slower than while the top cell was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_speed_vs_top: Option<f64>,
    /// The assumption furthest off, in words.
    pub explanation: String,
}

impl Validation {
    /// The accuracy of `model`, when it was validated.
    pub fn accuracy(&self, model: CacheKind) -> Option<&ModelAccuracy> {
        self.models.iter().find(|m| m.model == model)
    }

    /// One line for charts and exported files, e.g.
    /// `validated: page-cache model median |error| 3.1% (max 6.0%) over 6 cells; minio 24.0%`.
    pub fn summary(&self, chosen: Option<CacheKind>) -> String {
        let mut models: Vec<&ModelAccuracy> = self.models.iter().collect();
        models.sort_by_key(|m| Some(m.model) != chosen);
        let parts: Vec<String> = models
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if i == 0 {
                    format!(
                        "{} model median |error| {:.1}% (max {:.1}%) over {} cells",
                        m.model.as_str(),
                        m.median_abs_error_pct,
                        m.max_abs_error_pct,
                        m.cells
                    )
                } else {
                    format!("{} {:.1}%", m.model.as_str(), m.median_abs_error_pct)
                }
            })
            .collect();
        format!("validated: {}", parts.join("; "))
    }
}
