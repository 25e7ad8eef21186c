//! CPU and memory sensitivity of an elastic job, from its throughput matrix (`profiler sweep`):
//! the rate the job's input pipeline can feed its GPUs with a given CPU and memory per GPU.
//!
//! The model. A matrix gives, at its own per-GPU batch, the per-GPU rate on a grid of cores and
//! GB per GPU; it is flat (GPU-bound) from `plateau_cpus` cores on. Read as an input pipeline:
//! below the plateau the rate is what the cores can prepare; at the plateau they prepare exactly
//! what the GPU consumes. Past the grid the pipeline's capacity grows linearly in cores (each
//! core prepares `reference_per_gpu / plateau_cpus` samples/s), which the matrix cannot show
//! because the GPU caps it. A job whose GPU-bound per-GPU rate is higher than the matrix's
//! (a larger local batch, fewer replicas to synchronise with) therefore needs more cores to run
//! GPU-bound, and one whose rate is lower needs fewer. Memory scales the pipeline's capacity by
//! the matrix's ratio rate(c, m) / rate(c, largest m) (page-cache misses). The rate is
//! min(GPU-bound, capacity), per GPU.
//!
//! The matrix's absolute rates belong to the profiled job; an elastic application mapped to it
//! (e.g. CIFAR-10 on ResNet-18's matrix) keeps only its shape: `reference_per_gpu` is set to the
//! application's own GPU-bound per-GPU rate at the matrix's batch (see [`attach_resources`]).

use super::super::super::profile::ProfileSet;
use super::AppModels;
use crate::matrix::{Interp, Surface};

/// Per-GPU feed rate (samples/s) the job's CPUs sustain, on a grid of cores per GPU and GB per
/// GPU, at the matrix's own batch; see [`ResourceModel::rate`].
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceModel {
    /// Matrix the model was read from (model name or path), for reports.
    pub source: String,
    /// The matrix's surface with rates as fractions of its best, in [0, 1] (levels in cores
    /// and GB per GPU, ascending).
    pub shape: Surface,
    /// Fewest cores per GPU (at the largest memory) at which the matrix reaches its best.
    pub plateau_cpus: f64,
    /// GPU-bound per-GPU samples/s the plateau corresponds to (the matrix's best, or the mapped
    /// application's own rate at the matrix's batch).
    pub reference_per_gpu: f64,
    /// Per-GPU batch the matrix was measured at, when it says.
    pub batch_per_gpu: Option<u64>,
}

/// Fraction of the best rate counted as reaching it when finding the plateau.
const PLATEAU: f64 = 0.999;

impl ResourceModel {
    /// From a matrix's surface (its first parameter combination).
    pub fn from_surface(s: &Surface, source: &str, batch_per_gpu: Option<u64>) -> ResourceModel {
        let best = s.max();
        let top = s.mem.len() - 1;
        let mut shape = s.clone();
        shape.tput = s
            .tput
            .iter()
            .map(|&t| {
                if best > 0.0 {
                    (t / best).clamp(0.0, 1.0)
                } else {
                    1.0
                }
            })
            .collect();
        let plateau_ci = (0..s.cpu.len())
            .find(|&ci| shape.on_grid(ci, top) >= PLATEAU)
            .unwrap_or(s.cpu.len() - 1);
        ResourceModel {
            source: source.to_owned(),
            shape,
            plateau_cpus: s.cpu[plateau_ci],
            reference_per_gpu: best,
            batch_per_gpu,
        }
    }

    /// The normalised surface, bilinear between levels (clamped above, linear to 0 below).
    fn frac(&self, c: f64, m: f64) -> f64 {
        self.shape.at(c, m, Interp::Bilinear)
    }

    /// Samples/s one GPU's input pipeline can prepare with `c` cores and `m` GB.
    pub fn capacity_per_gpu(&self, c: f64, m: f64) -> f64 {
        let top_m = self.shape.mem[self.shape.mem.len() - 1];
        let cpu_part = if c <= self.plateau_cpus {
            self.frac(c, top_m)
        } else {
            c / self.plateau_cpus
        };
        // Memory's effect measured at the highest CPU level the grid has (clamped).
        let cc = c.min(self.shape.cpu[self.shape.cpu.len() - 1]);
        let full = self.frac(cc, top_m);
        let mem_part = if full > 0.0 {
            (self.frac(cc, m) / full).clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.reference_per_gpu * cpu_part * mem_part
    }

    /// The job's samples/s on `gpus` GPUs when the GPUs alone would run `gpu_bound` samples/s.
    pub fn rate(&self, gpu_bound: f64, gpus: u32, cpus_per_gpu: f64, mem_gb_per_gpu: f64) -> f64 {
        if gpus == 0 || gpu_bound <= 0.0 {
            return 0.0;
        }
        let g = gpus as f64;
        let per = (gpu_bound / g).min(self.capacity_per_gpu(cpus_per_gpu, mem_gb_per_gpu));
        g * per.max(0.0)
    }

    /// Smallest memory level (GB per GPU) at which `c` cores per GPU lose at most `1 - keep` of
    /// their rate to memory; the largest level when none does.
    pub fn mem_for(&self, c: f64, keep: f64) -> f64 {
        let top = self.shape.mem[self.shape.mem.len() - 1];
        let full = self.capacity_per_gpu(c, top);
        self.shape
            .mem
            .iter()
            .copied()
            .find(|&m| self.capacity_per_gpu(c, m) >= keep * full)
            .unwrap_or(top)
    }
}

/// The zoo matrix (Synergy's model names) standing in for an elastic application's input
/// pipeline, by the application's name: Pollux's `cifar10` and ONES's CIFAR-10 CNNs on ResNet-18,
/// ImageNet CNNs on ResNet-50 (AlexNet on its own), BERT on BERT, DeepSpeech2 on DeepSpeech.
/// `None` where nothing fits (Pollux's NCF recommender and YOLOv3 detector have no matrix).
pub fn zoo_matrix_for(app: &str) -> Option<&'static str> {
    let a = app.to_ascii_lowercase();
    let has = |k: &str| a.contains(k);
    if has("alexnet") {
        Some("alexnet")
    } else if has("bert") {
        Some("bert")
    } else if has("deepspeech") {
        Some("deepspeech")
    } else if has("imagenet") || has("resnet50") || has("inception") {
        Some("resnet50")
    } else if has("cifar") || has("resnet18") || has("googlenet") || has("vgg") {
        Some("resnet18")
    } else if has("mobilenet") {
        Some("mobilenet")
    } else if has("transformer") {
        Some("transformer")
    } else {
        None
    }
}

/// Fills [`super::AppModel::resources`] for every application [`zoo_matrix_for`] maps to a
/// profile in `profiles` (an application that already has one keeps it); each keeps the
/// matrix's shape at its own GPU-bound rate (one GPU, the matrix's batch, or the largest local
/// batch that fits when the matrix says none). Returns the applications left without one.
pub fn attach_resources(models: &mut AppModels, profiles: &ProfileSet) -> Vec<String> {
    let mut left = Vec::new();
    for app in &mut models.apps {
        if app.resources.is_some() {
            continue;
        }
        let Some(i) = zoo_matrix_for(&app.name).and_then(|n| profiles.lookup(n)) else {
            left.push(app.name.clone());
            continue;
        };
        let p = profiles.get(i);
        let mut r = ResourceModel::from_surface(&p.surface, &p.model, p.batch_size_per_gpu);
        let batch = p
            .batch_size_per_gpu
            .map(|b| (b as f64).min(app.max_local_batch.max(1) as f64))
            .unwrap_or(app.max_local_batch.max(1) as f64);
        let own = app.throughput(1, 1, batch);
        if own > 0.0 {
            r.reference_per_gpu = own;
        }
        app.resources = Some(r);
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> ResourceModel {
        // 1..4 cores, 2 memory levels; GPU-bound (1.0) from 3 cores at the larger memory.
        let s = Surface {
            model: "m".into(),
            gpus: 1,
            cpu: vec![1.0, 2.0, 3.0, 4.0],
            mem: vec![10.0, 20.0],
            tput: vec![
                25.0, 50.0, //
                50.0, 80.0, //
                60.0, 100.0, //
                60.0, 100.0,
            ],
            params: Default::default(),
        };
        ResourceModel::from_surface(&s, "m", Some(64))
    }

    #[test]
    fn rate_is_gpu_bound_at_the_plateau_and_cpu_bound_below() {
        let r = model();
        assert_eq!(r.plateau_cpus, 3.0);
        assert!((r.rate(100.0, 1, 3.0, 20.0) - 100.0).abs() < 1e-9);
        assert!((r.rate(200.0, 2, 2.0, 20.0) - 160.0).abs() < 1e-9);
        // Memory: at 3 cores the smaller level gives 60 of 100.
        assert!((r.rate(100.0, 1, 3.0, 10.0) - 60.0).abs() < 1e-9);
        assert_eq!(r.mem_for(3.0, 0.99), 20.0);
    }

    #[test]
    fn a_faster_gpu_needs_cores_beyond_the_plateau() {
        let r = model();
        // Twice the matrix's GPU-bound rate: 3 cores feed 100, 6 cores feed 200.
        assert!((r.rate(200.0, 1, 3.0, 20.0) - 100.0).abs() < 1e-9);
        assert!((r.rate(200.0, 1, 4.5, 20.0) - 150.0).abs() < 1e-9);
        assert!((r.rate(200.0, 1, 6.0, 20.0) - 200.0).abs() < 1e-9);
        // Half of it: 1.5 cores are enough... at least as fast as the bilinear surface says.
        assert!(r.rate(50.0, 1, 2.0, 20.0) >= 50.0 - 1e-9);
    }

    #[test]
    fn applications_map_to_zoo_matrices() {
        assert_eq!(zoo_matrix_for("cifar10"), Some("resnet18"));
        assert_eq!(zoo_matrix_for("imagenet"), Some("resnet50"));
        assert_eq!(zoo_matrix_for("bert"), Some("bert"));
        assert_eq!(zoo_matrix_for("deepspeech2"), Some("deepspeech"));
        assert_eq!(zoo_matrix_for("alexnet-imagenet"), Some("alexnet"));
        assert_eq!(zoo_matrix_for("ncf"), None);
        assert_eq!(zoo_matrix_for("yolov3"), None);
    }
}
