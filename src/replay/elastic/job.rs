//! Elastic jobs: the trace's description and the state the engine keeps while a job runs.

use std::path::PathBuf;

/// How a job's own script sets its global batch from the GPUs it gets. Batch-adaptive
/// schedulers (Pollux, the joint search) may instead choose any global batch within
/// [`ElasticJobSpec::min_batch`, `ElasticJobSpec::max_batch`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BatchRule {
    /// The global batch is fixed (the user's), whatever the GPU count: Pollux's workloads
    /// under non-adaptive schedulers.
    Fixed(u32),
    /// ONES's rule: global batch = GPUs x per-GPU base batch while the learning rate, scaled
    /// linearly with it, stays under its cap (`max_scale` = max_lr / lr); then the global
    /// batch stays at `max_scale` x base and the per-GPU batch shrinks.
    LinearScaling { max_scale: f64 },
    /// The scheduler chooses the global batch within [`ElasticJobSpec::min_batch`,
    /// `max_batch`] (Pollux; the joint search).
    Free,
}

/// When a job is done.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Completion {
    /// After this much progress, in samples at the base batch (statistical-efficiency-weighted
    /// samples: a larger batch makes less progress per sample).
    Progress { samples: f64 },
}

/// One job as a trace gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticJobSpec {
    pub id: u64,
    /// The trace's name for the job (Pollux: `cifar10-0`; ONES: `model-task-N`).
    pub name: String,
    /// Application key into [`super::model::AppModels`].
    pub app: String,
    pub arrival_s: f64,
    /// GPUs the user asked for; non-elastic schedulers run the job at exactly this.
    pub requested_gpus: u32,
    /// Per-GPU base batch b0; also the reference batch B0 of statistical efficiency.
    pub base_batch: u32,
    pub batch_rule: BatchRule,
    /// Bounds of the global batch.
    pub min_batch: u32,
    pub max_batch: u32,
    /// Samples in one epoch (ONES reconfigures a job at most once per epoch).
    pub epoch_samples: f64,
    pub completion: Completion,
    /// Trace file and line, for errors.
    pub origin: Option<(PathBuf, usize)>,
}

impl ElasticJobSpec {
    /// Global batch at `gpus` GPUs under [`BatchRule::Fixed`] or [`BatchRule::LinearScaling`];
    /// `None` under [`BatchRule::Free`] (the scheduler chooses). Always within
    /// [`Self::min_batch`, `Self::max_batch`].
    pub fn rule_batch(&self, gpus: u32) -> Option<u32> {
        let b = match self.batch_rule {
            BatchRule::Fixed(b) => b as f64,
            BatchRule::LinearScaling { max_scale } => {
                let base = self.base_batch as f64;
                (gpus.max(1) as f64 * base).min((max_scale * base).floor())
            }
            BatchRule::Free => return None,
        };
        Some((b as u32).clamp(self.min_batch, self.max_batch.max(self.min_batch)))
    }

    /// Total progress the job needs, in base-batch samples.
    pub fn work(&self) -> f64 {
        match self.completion {
            Completion::Progress { samples } => samples,
        }
    }
}

/// A job in the elastic replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ElasticJob {
    pub spec: ElasticJobSpec,
    /// Progress made, base-batch samples (at most `spec.work()`).
    pub progress: f64,
    /// Samples processed (raw, whatever the batch).
    pub samples: f64,
    /// What the job holds now; `None`: queued or preempted.
    pub allocation: Option<super::allocation::Allocation>,
    /// No progress before this time: the job is restarting after a change of allocation (its
    /// GPUs stay held meanwhile).
    pub busy_until_s: f64,
    /// Allocation changes so far (start, resize, move, preemption, resumption).
    pub reconfigurations: u32,
    /// `samples` when the allocation last changed (ONES changes a job at most once an epoch).
    pub samples_at_last_change: f64,
    /// GPU-seconds held so far (Tiresias's attained service).
    pub attained_gpu_s: f64,
    /// Seconds holding an allocation.
    pub run_s: f64,
    /// The most GPUs the job has made progress on (what Pollux has profiled it at).
    pub max_gpus_run: u32,
    pub first_start_s: Option<f64>,
    pub finish_s: Option<f64>,
}

impl ElasticJob {
    pub fn new(spec: ElasticJobSpec) -> ElasticJob {
        ElasticJob {
            spec,
            progress: 0.0,
            samples: 0.0,
            allocation: None,
            busy_until_s: 0.0,
            reconfigurations: 0,
            samples_at_last_change: 0.0,
            attained_gpu_s: 0.0,
            run_s: 0.0,
            max_gpus_run: 0,
            first_start_s: None,
            finish_s: None,
        }
    }

    /// Fraction of the work done, in [0, 1].
    pub fn progress_frac(&self) -> f64 {
        let w = self.spec.work();
        if w > 0.0 {
            (self.progress / w).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    pub fn remaining(&self) -> f64 {
        (self.spec.work() - self.progress).max(0.0)
    }

    /// Epochs completed since the allocation last changed.
    pub fn epochs_since_change(&self) -> f64 {
        if self.spec.epoch_samples > 0.0 {
            (self.samples - self.samples_at_last_change) / self.spec.epoch_samples
        } else {
            f64::INFINITY
        }
    }
}
