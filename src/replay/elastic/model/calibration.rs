//! The calibrated application table: Pollux's six applications, fitted to their measured step
//! times and gradient statistics, and ONES's ten job types, each on the shape of the closest
//! Pollux application scaled to ONES's measured throughputs (see docs/findings/elastic-model.md).
//!
//! [`calibrate`] computes the table from the data under `workloads/elastic/`; the result is
//! committed as `workloads/elastic/models.json` and compiled into the binary
//! ([`Calibration::builtin`]), so a replay needs no data files. A test refits and compares, so a
//! change of data or of the fit shows.

use super::efficiency::EfficiencyModel;
use super::fit::{self, PhiSource};
use super::reference::{self, HistoryRow, StepSample, ValidationCurve};
use super::step_time::StepTimeModel;
use super::{AppModel, AppModels};
use crate::replay::error::ReplayError;
use crate::stats::median;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::LazyLock;

/// Pollux's applications, in the order of the table.
pub const POLLUX_APPS: [&str; 6] = [
    "bert",
    "cifar10",
    "deepspeech2",
    "imagenet",
    "ncf",
    "yolov3",
];

/// GPUs per server of the cluster ONES's history was measured on (4-GPU nodes).
pub const ONES_GPUS_PER_SERVER: u32 = 4;

/// Relative errors of a fit on its own data.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FitError {
    pub median: f64,
    pub max: f64,
    pub samples: usize,
}

/// Iteration-count error of the efficiency model on one validation curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurveError {
    pub batch: u32,
    pub median: f64,
    pub max: f64,
}

/// One of Pollux's applications.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolluxApp {
    pub name: String,
    /// B0: the smallest validated global batch (the reference of statistical efficiency).
    pub base_batch: u32,
    /// The largest validated global batch.
    pub max_batch: u32,
    pub min_local_batch: u32,
    pub max_local_batch: u32,
    /// Samples in one epoch (a validation row is one epoch).
    pub epoch_samples: f64,
    /// Progress (base-batch samples) every validation curve reaches: the job's work.
    pub work_samples: f64,
    pub step_time: StepTimeModel,
    pub step_fit: FitError,
    pub efficiency: EfficiencyModel,
    /// Where `efficiency`'s phi comes from: the source with the smaller worst error.
    pub phi_source: PhiSource,
    /// Iteration errors of the chosen model, per curve.
    pub efficiency_fit: Vec<CurveError>,
    /// Iteration errors with phi from each source, for comparison.
    pub efficiency_fit_gradient_statistics: Vec<CurveError>,
    pub efficiency_fit_iterations: Vec<CurveError>,
}

/// Measured against modelled per-GPU throughput of a ONES job type at one GPU count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThroughputPoint {
    pub gpus: u32,
    pub measured_per_gpu: f64,
    pub model_per_gpu: f64,
}

/// Work of one dataset size of a ONES job type, from the history's runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OnesWork {
    pub epoch_size: f64,
    /// Epochs the history's runs took to finish (mean over runs).
    pub epochs: f64,
    /// Global batch those runs trained at.
    pub history_batch: f64,
    /// Progress (base-batch samples) those epochs made: epochs x epoch_size x the mean
    /// efficiency of `history_batch` over the run.
    pub work_samples: f64,
}

/// One of ONES's job types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnesType {
    /// `model-task` as in ONES's trace, e.g. `resnet18-cifar`.
    pub key: String,
    /// The Pollux application whose step-time shape and gradient noise it takes.
    pub shape: String,
    pub base_batch: u32,
    pub max_local_batch: u32,
    /// Multiplies every time parameter of the shape's step-time model.
    pub time_scale: f64,
    pub step_time: StepTimeModel,
    pub throughput_fit: Vec<ThroughputPoint>,
    /// Multiplies the shape's phi: sqrt(dataset size / the shape's dataset size).
    pub phi_scale: f64,
    pub efficiency: EfficiencyModel,
    pub work: Vec<OnesWork>,
}

impl OnesType {
    /// Progress a job of `epoch_size` samples needs: the history's epochs for that size (the
    /// nearest size the history has, for others) times `epoch_size`, converted to base-batch
    /// progress like the history's runs.
    pub fn work_for(&self, epoch_size: f64) -> Option<f64> {
        let w = self.work.iter().min_by(|a, b| {
            (a.epoch_size.ln() - epoch_size.ln())
                .abs()
                .total_cmp(&(b.epoch_size.ln() - epoch_size.ln()).abs())
        })?;
        Some(w.work_samples / w.epoch_size * epoch_size)
    }
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub pollux: Vec<PolluxApp>,
    pub ones: Vec<OnesType>,
}

static BUILTIN: LazyLock<Calibration> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../../../workloads/elastic/models.json"))
        .expect("workloads/elastic/models.json is generated by calibrate and checked by a test")
});

impl Calibration {
    /// The committed table (`workloads/elastic/models.json`).
    pub fn builtin() -> &'static Calibration {
        &BUILTIN
    }

    pub fn pollux_app(&self, name: &str) -> Option<&PolluxApp> {
        self.pollux.iter().find(|a| a.name == name)
    }

    pub fn ones_type(&self, key: &str) -> Option<&OnesType> {
        self.ones.iter().find(|a| a.key == key)
    }

    /// Every application as an [`AppModel`] (no CPU/memory model).
    pub fn app_models(&self) -> AppModels {
        let pollux = self.pollux.iter().map(|a| AppModel {
            name: a.name.clone(),
            step_time: a.step_time,
            efficiency: a.efficiency.clone(),
            max_local_batch: a.max_local_batch,
            min_local_batch: a.min_local_batch,
            // AdaptDL's agent and Pollux's simulator accumulate on one GPU above the initial
            // batch; ONES's jobs do not accumulate.
            accumulate_alone_above: Some(a.base_batch),
            resources: None,
        });
        let ones = self.ones.iter().map(|t| AppModel {
            name: t.key.clone(),
            step_time: t.step_time,
            efficiency: t.efficiency.clone(),
            max_local_batch: t.max_local_batch,
            min_local_batch: 1,
            accumulate_alone_above: None,
            resources: None,
        });
        AppModels {
            apps: pollux.chain(ones).collect(),
        }
    }

    /// Pretty JSON, as committed.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("plain data serialises");
        s.push('\n');
        s
    }
}

impl AppModels {
    /// Pollux's six applications and ONES's ten job types, as calibrated.
    pub fn builtin() -> AppModels {
        Calibration::builtin().app_models()
    }
}

/// Step-time samples of one Pollux application (`placements.csv` and `scalability.csv`).
pub fn step_samples(dir: &Path) -> Result<Vec<StepSample>, ReplayError> {
    let mut data = reference::read_placements(&dir.join("placements.csv"))?;
    data.extend(reference::read_scalability(&dir.join("scalability.csv"))?);
    Ok(data)
}

fn bad(dir: &Path, message: &str) -> ReplayError {
    ReplayError::parse(dir, 0, message.to_owned())
}

/// Calibrates one Pollux application from its directory.
pub fn calibrate_pollux(name: &str, dir: &Path) -> Result<PolluxApp, ReplayError> {
    let data = step_samples(dir)?;
    let st = fit::fit_step_time(&data).ok_or_else(|| bad(dir, "no 1-GPU step times"))?;
    let curves: Vec<ValidationCurve> = reference::read_validations(dir)?;
    let (eff, phi_source) = fit::fit_efficiency(&curves)
        .ok_or_else(|| bad(dir, "no usable validation-<B>.csv curves"))?;
    let errors = |m: &EfficiencyModel| -> Vec<CurveError> {
        fit::check_efficiency(m, &curves)
            .into_iter()
            .map(|c| CurveError {
                batch: c.batch,
                median: c.median_rel_err,
                max: c.max_rel_err,
            })
            .collect()
    };
    let by_source = |s: PhiSource| {
        fit::fit_efficiency_from(&curves, s)
            .map(|m| errors(&m))
            .unwrap_or_default()
    };
    let b0 = curves[0].batch;
    let total = fit::total_progress(&curves);
    let rows = curves
        .iter()
        .map(|c| c.rows.len())
        .min()
        .unwrap_or(1)
        .max(1);
    let local =
        |pick: fn(f64, f64) -> f64, init: f64| data.iter().map(|s| s.local_batch).fold(init, pick);
    Ok(PolluxApp {
        name: name.to_owned(),
        base_batch: b0,
        max_batch: curves.iter().map(|c| c.batch).max().unwrap_or(b0),
        min_local_batch: local(f64::min, f64::INFINITY).round() as u32,
        // Pollux's simulator caps YOLOv3 at 8 per GPU (GPU memory), below what it measured.
        max_local_batch: if name == "yolov3" {
            8
        } else {
            local(f64::max, 0.0).round() as u32
        },
        epoch_samples: total * b0 as f64 / rows as f64,
        work_samples: total * b0 as f64,
        step_time: st.model,
        step_fit: FitError {
            median: st.median_rel_err,
            max: st.max_rel_err,
            samples: st.samples,
        },
        efficiency_fit: errors(&eff),
        efficiency_fit_gradient_statistics: by_source(PhiSource::GradientStatistics),
        efficiency_fit_iterations: by_source(PhiSource::Iterations),
        efficiency: eff,
        phi_source,
    })
}

/// ONES's job types: (key, Pollux shape, per-GPU base batch). ResNet18, GoogLeNet and VGG16 on
/// CIFAR-10 take Pollux's CIFAR-10 (ResNet18); the ImageNet subsets Pollux's ImageNet
/// (ResNet50); the BERT fine-tunings Pollux's BERT (SQuAD fine-tuning).
pub const ONES_TYPES: [(&str, &str, u32); 10] = [
    ("bert-cola", "bert", 16),
    ("bert-mrpc", "bert", 16),
    ("bert-sst2", "bert", 32),
    ("resnet18-cifar", "cifar10", 256),
    ("vgg16-cifar", "cifar10", 128),
    ("googlenet-cifar", "cifar10", 256),
    ("alexnet-imagenet", "imagenet", 64),
    ("resnet50-imagenet", "imagenet", 32),
    ("vgg16-imagenet", "imagenet", 32),
    ("inception_v3-imagenet", "imagenet", 32),
];

/// Which type each run of `job_history.csv` is: `id,epoch_size,type` (the history's ids are row
/// numbers of ONES's development trace; see workloads/elastic/PROVENANCE.md).
pub fn read_history_types(path: &Path) -> Result<Vec<(u64, f64, String)>, ReplayError> {
    let mut out = Vec::new();
    crate::replay::workload::for_each_line(path, |n, line| {
        if n == 1 {
            return Ok(());
        }
        let f: Vec<&str> = line.split(',').collect();
        let id: u64 = crate::replay::workload::field(path, n, &f, 0, "id")?;
        let size: f64 = crate::replay::workload::field(path, n, &f, 1, "epoch_size")?;
        let key = f.get(2).map(|s| s.trim().to_owned()).unwrap_or_default();
        if !ONES_TYPES.iter().any(|t| t.0 == key) {
            return Err(ReplayError::parse(
                path,
                n,
                format!("unknown job type {key:?}"),
            ));
        }
        out.push((id, size, key));
        Ok(())
    })?;
    Ok(out)
}

/// One finished run of the history: its type and rows.
struct Run<'a> {
    key: &'a str,
    rows: Vec<&'a HistoryRow>,
}

fn scaled(m: &StepTimeModel, k: f64) -> StepTimeModel {
    StepTimeModel {
        compute_s: m.compute_s * k,
        compute_s_per_sample: m.compute_s_per_sample * k,
        sync_local_s: m.sync_local_s * k,
        sync_local_s_per_replica: m.sync_local_s_per_replica * k,
        sync_node_s: m.sync_node_s * k,
        sync_node_s_per_replica: m.sync_node_s_per_replica * k,
        gamma: m.gamma,
    }
}

fn per_gpu(m: &StepTimeModel, gpus: u32, local: f64) -> f64 {
    let nodes = gpus.div_ceil(ONES_GPUS_PER_SERVER);
    local / m.step_time(gpus, nodes, local)
}

/// Mean of 1/E(B, f) over f in [0, 1]: samples per unit of base-batch progress over a run.
fn mean_inverse_efficiency(e: &EfficiencyModel, b: f64, b0: f64) -> f64 {
    const N: usize = 400;
    (0..N)
        .map(|i| 1.0 / e.efficiency(b, b0, (i as f64 + 0.5) / N as f64))
        .sum::<f64>()
        / N as f64
}

/// Calibrates ONES's job types from the history (`history`, `types`) on `pollux`'s shapes.
pub fn calibrate_ones(
    pollux: &[PolluxApp],
    history: &[HistoryRow],
    types: &[(u64, f64, String)],
    history_path: &Path,
) -> Result<Vec<OnesType>, ReplayError> {
    let runs = history_runs(history, types, history_path)?;
    let mut out = Vec::new();
    for (key, shape, b0) in ONES_TYPES {
        let app = pollux
            .iter()
            .find(|a| a.name == shape)
            .ok_or_else(|| bad(history_path, &format!("no Pollux application {shape}")))?;
        let mine: Vec<&Run> = runs.iter().filter(|r| r.key == key).collect();
        if mine.is_empty() {
            return Err(bad(history_path, &format!("no history run of {key}")));
        }
        out.push(ones_type((key, shape, b0), app, &mine));
    }
    Ok(out)
}

/// The history's rows of each typed run; an error names a run the history lacks.
fn history_runs<'a>(
    history: &'a [HistoryRow],
    types: &'a [(u64, f64, String)],
    history_path: &Path,
) -> Result<Vec<Run<'a>>, ReplayError> {
    let mut runs: Vec<Run> = Vec::new();
    for (id, size, key) in types {
        let rows: Vec<&HistoryRow> = history
            .iter()
            .filter(|r| r.id == *id && r.epoch_size == *size)
            .collect();
        if rows.is_empty() {
            return Err(bad(
                history_path,
                &format!("no run with id {id} and epoch_size {size}"),
            ));
        }
        runs.push(Run { key, rows });
    }
    Ok(runs)
}

/// One ONES job type (`key`, its shape's name, per-GPU base batch `b0`) on the shape `app`,
/// from its runs `mine`: the shape's step times scaled to the runs' throughputs, its gradient
/// noise scaled to the type's dataset sizes, and the work of each size.
fn ones_type((key, shape, b0): (&str, &str, u32), app: &PolluxApp, mine: &[&Run]) -> OnesType {
    let measured = steady_throughputs(mine, b0);
    // One time scale for the whole model, least squares on the log of the throughput.
    let logs: Vec<f64> = measured
        .iter()
        .map(|&(g, x)| (per_gpu(&app.step_time, g, b0 as f64) / x).ln())
        .collect();
    let time_scale = crate::stats::mean(&logs).exp();
    let step_time = scaled(&app.step_time, time_scale);
    let throughput_fit = measured
        .iter()
        .map(|&(gpus, x)| ThroughputPoint {
            gpus,
            measured_per_gpu: x,
            model_per_gpu: per_gpu(&step_time, gpus, b0 as f64),
        })
        .collect();
    // Gradient noise grows with what there is to learn: scale phi by the square root of
    // the dataset size (geometric mean of the type's sizes) over the shape's.
    let sizes: Vec<f64> = mine.iter().map(|r| r.rows[0].epoch_size).collect();
    let size = (sizes.iter().map(|s| s.ln()).sum::<f64>() / sizes.len() as f64).exp();
    let phi_scale = (size / app.epoch_samples).sqrt();
    let efficiency = EfficiencyModel {
        phi: app
            .efficiency
            .phi
            .iter()
            .map(|&(f, p)| (f, p * phi_scale))
            .collect(),
    };
    let work = ones_work(mine, &sizes, &efficiency, b0);
    OnesType {
        key: key.to_owned(),
        shape: shape.to_owned(),
        base_batch: b0,
        // ONES keeps the per-GPU batch at or below the base; batch-adaptive policies may
        // go up to what the shape fits in GPU memory.
        max_local_batch: app.max_local_batch.max(b0),
        time_scale,
        step_time,
        throughput_fit,
        phi_scale,
        efficiency,
        work,
    }
}

/// Steady per-GPU throughput per GPU count, fewest GPUs first: each run's epochs after the
/// first at that count (the first after a start runs at half speed or so), median over all of
/// them.
fn steady_throughputs(mine: &[&Run], b0: u32) -> Vec<(u32, f64)> {
    let mut by_gpus: Vec<(u32, Vec<f64>)> = Vec::new();
    for run in mine {
        let mut prev_gpus = 0;
        for r in &run.rows {
            let gpus = (r.global_batch / b0 as f64).round().max(1.0) as u32;
            if gpus == prev_gpus {
                match by_gpus.iter_mut().find(|(g, _)| *g == gpus) {
                    Some((_, v)) => v.push(r.throughput / gpus as f64),
                    None => by_gpus.push((gpus, vec![r.throughput / gpus as f64])),
                }
            }
            prev_gpus = gpus;
        }
    }
    by_gpus.sort_by_key(|(g, _)| *g);
    by_gpus.iter().map(|(g, v)| (*g, median(v))).collect()
}

/// The work of each distinct dataset size among `sizes` (the runs' own, in `mine`'s order):
/// the runs' mean epochs, converted to base-batch progress at their median batch.
fn ones_work(mine: &[&Run], sizes: &[f64], efficiency: &EfficiencyModel, b0: u32) -> Vec<OnesWork> {
    let mut work: Vec<OnesWork> = Vec::new();
    let mut distinct: Vec<f64> = sizes.to_vec();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    for s in distinct {
        let same: Vec<&&Run> = mine.iter().filter(|r| r.rows[0].epoch_size == s).collect();
        let epochs = same
            .iter()
            .map(|r| r.rows[0].total_workload / s)
            .sum::<f64>()
            / same.len() as f64;
        let batches: Vec<f64> = same
            .iter()
            .flat_map(|r| r.rows.iter().map(|x| x.global_batch))
            .collect();
        let history_batch = median(&batches);
        let inv = mean_inverse_efficiency(efficiency, history_batch, b0 as f64);
        work.push(OnesWork {
            epoch_size: s,
            epochs,
            history_batch,
            work_samples: epochs * s / inv,
        });
    }
    work
}

/// The whole table from `root` (the repository's `workloads/elastic/`).
pub fn calibrate(root: &Path) -> Result<Calibration, ReplayError> {
    let pollux = POLLUX_APPS
        .iter()
        .map(|a| calibrate_pollux(a, &root.join("pollux").join(a)))
        .collect::<Result<Vec<_>, _>>()?;
    let history_path = root.join("ones/job_history.csv");
    let history = reference::read_history(&history_path)?;
    let types = read_history_types(&root.join("ones/history_types.csv"))?;
    let ones = calibrate_ones(&pollux, &history, &types, &history_path)?;
    Ok(Calibration { pollux, ones })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_loads_with_every_application() {
        let c = Calibration::builtin();
        let names: Vec<&str> = c.pollux.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, POLLUX_APPS);
        let keys: Vec<&str> = c.ones.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ONES_TYPES.map(|t| t.0));
        assert_eq!(AppModels::builtin().apps.len(), 16);
    }

    #[test]
    fn ones_work_scales_with_the_nearest_history_size() {
        let c = Calibration::builtin();
        let t = c.ones_type("alexnet-imagenet").unwrap();
        let w10 = t.work_for(10_000.0).unwrap();
        let w20 = t.work_for(20_000.0).unwrap();
        // The history's 20k run took 69 epochs, the 10k run 21.
        assert!(w20 > 3.0 * w10, "{w10} {w20}");
        // A size between takes the nearest size's epochs.
        assert!((t.work_for(11_000.0).unwrap() - 1.1 * w10).abs() < 1e-6 * w10);
    }
}
