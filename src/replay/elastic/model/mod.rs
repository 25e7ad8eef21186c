//! The elastic job model: how fast a job runs on a given allocation ([`step_time`]), how much
//! progress each sample makes at a given batch ([`efficiency`]), and how its rate depends on the
//! CPU and memory it gets ([`resources`]). One [`AppModel`] per application, calibrated from
//! measured data (see docs/findings/elastic-model.md).

pub mod calibration;
pub mod efficiency;
pub mod fit;
pub mod reference;
pub mod resources;
pub mod step_time;

use efficiency::EfficiencyModel;
use resources::ResourceModel;
use step_time::StepTimeModel;

/// Everything the replay knows about one application.
#[derive(Debug, Clone, PartialEq)]
pub struct AppModel {
    pub name: String,
    pub step_time: StepTimeModel,
    pub efficiency: EfficiencyModel,
    /// Largest per-GPU batch that fits in GPU memory.
    pub max_local_batch: u32,
    /// Smallest per-GPU batch measured: schedulers that follow Pollux give a job no more GPUs
    /// than its batch has micro-batches of this size.
    pub min_local_batch: u32,
    /// AdaptDL's rule: one GPU running a global batch above this accumulates gradients at
    /// least once (two micro-batches), so that its gradient noise can be measured between
    /// them. `None`: no such rule.
    pub accumulate_alone_above: Option<u32>,
    /// CPU/memory sensitivity; `None`: the job runs at full speed on any CPU and memory.
    pub resources: Option<ResourceModel>,
}

impl AppModel {
    /// How a per-GPU batch of `local_batch` samples runs: as `accumulation + 1` micro-batches
    /// of `micro` samples each, none above [`Self::max_local_batch`] (gradient accumulation,
    /// as AdaptDL and Pollux's simulator do it; on one GPU see
    /// [`Self::accumulate_alone_above`]). Every policy runs batches this way, so none gets a
    /// step larger than fits on a GPU.
    pub fn micro_batches(&self, gpus: u32, local_batch: f64) -> (f64, u32) {
        let max = self.max_local_batch.max(1) as f64;
        let mut accumulation = ((local_batch / max - 1e-9).ceil().max(1.0) - 1.0) as u32;
        if gpus == 1
            && self
                .accumulate_alone_above
                .is_some_and(|b| local_batch > b as f64 + 1e-9)
        {
            accumulation = accumulation.max(1);
        }
        (local_batch / (accumulation + 1) as f64, accumulation)
    }

    /// Samples/s of `gpus` GPUs over `nodes` servers at `local_batch` samples per GPU per
    /// optimizer step, with ample CPU and memory. A local batch above
    /// [`Self::max_local_batch`] accumulates gradients ([`Self::micro_batches`]): each extra
    /// micro-batch costs a forward and backward pass, the last one the synchronised step.
    pub fn throughput(&self, gpus: u32, nodes: u32, local_batch: f64) -> f64 {
        if gpus == 0 || local_batch <= 0.0 {
            return 0.0;
        }
        let (micro, accumulation) = self.micro_batches(gpus, local_batch);
        let t = accumulation as f64 * self.step_time.compute_time(micro).max(0.0)
            + self.step_time.step_time(gpus, nodes, micro);
        if t > 0.0 && t.is_finite() {
            gpus as f64 * local_batch / t
        } else {
            0.0
        }
    }

    /// Samples/s with `cpus_per_gpu` cores and `mem_gb_per_gpu` GB per GPU: the GPU-bound
    /// throughput, limited by what the CPUs can feed (see [`ResourceModel::rate`]).
    pub fn throughput_with(
        &self,
        gpus: u32,
        nodes: u32,
        local_batch: f64,
        cpus_per_gpu: f64,
        mem_gb_per_gpu: f64,
    ) -> f64 {
        let x = self.throughput(gpus, nodes, local_batch);
        match &self.resources {
            Some(r) => r.rate(x, gpus, cpus_per_gpu, mem_gb_per_gpu),
            None => x,
        }
    }

    /// Progress per second (base-batch samples/s): throughput x statistical efficiency of the
    /// global batch at the job's current progress fraction.
    pub fn goodput(
        &self,
        gpus: u32,
        nodes: u32,
        global_batch: u32,
        base_batch: u32,
        progress_frac: f64,
    ) -> f64 {
        let local = global_batch as f64 / gpus.max(1) as f64;
        self.throughput(gpus, nodes, local)
            * self
                .efficiency
                .efficiency(global_batch as f64, base_batch as f64, progress_frac)
    }
}

/// The application models a replay uses, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppModels {
    pub apps: Vec<AppModel>,
}

impl AppModels {
    pub fn get(&self, name: &str) -> Option<&AppModel> {
        self.apps.iter().find(|a| a.name == name)
    }

    pub fn names(&self) -> String {
        self.apps
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn app(max_local_batch: u32) -> AppModel {
        AppModel {
            name: "a".into(),
            step_time: StepTimeModel {
                compute_s: 0.02,
                compute_s_per_sample: 0.001,
                sync_local_s: 0.01,
                sync_local_s_per_replica: 0.001,
                sync_node_s: 0.05,
                sync_node_s_per_replica: 0.01,
                gamma: 2.0,
            },
            efficiency: EfficiencyModel::constant(100.0),
            max_local_batch,
            min_local_batch: 1,
            accumulate_alone_above: None,
            resources: None,
        }
    }

    #[test]
    fn a_local_batch_above_what_fits_accumulates_gradients() {
        let m = app(64);
        assert_eq!(m.micro_batches(4, 64.0), (64.0, 0));
        assert_eq!(m.micro_batches(4, 65.0), (32.5, 1));
        assert_eq!(m.micro_batches(4, 256.0), (64.0, 3));
        // 256 per GPU: three compute-only passes of 64, then the synchronised step of 64.
        let expected = 4.0 * 256.0 / (3.0 * (0.02 + 0.064) + m.step_time.step_time(4, 1, 64.0));
        assert!((m.throughput(4, 1, 256.0) - expected).abs() < 1e-9);
        // Never faster than if it all fitted in one step.
        assert!(m.throughput(4, 1, 256.0) < app(256).throughput(4, 1, 256.0));
    }

    proptest! {
        /// Accumulation splits the local batch exactly, into micro-batches that fit.
        #[test]
        fn micro_batches_fit_and_add_up(local in 1.0f64..1e5, max in 1u32..4096) {
            let (micro, accumulation) = app(max).micro_batches(2, local);
            prop_assert!(micro <= max as f64 + 1e-9);
            prop_assert!((micro * (accumulation + 1) as f64 - local).abs() < 1e-6 * local);
            // The fewest micro-batches that fit.
            prop_assert!(accumulation == 0 || local / accumulation as f64 > max as f64);
        }
    }
}
