//! The elastic job model: how fast a job runs on a given allocation ([`step_time`]), how much
//! progress each sample makes at a given batch ([`efficiency`]), and how its rate depends on the
//! CPU and memory it gets ([`resources`]). One [`AppModel`] per application, calibrated from
//! measured data (see docs/REPLAY.md, "Elastic jobs").

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
    /// CPU/memory sensitivity; `None`: the job runs at full speed on any CPU and memory.
    pub resources: Option<ResourceModel>,
}

impl AppModel {
    /// Samples/s of `gpus` GPUs over `nodes` servers at `local_batch` samples per GPU per step,
    /// with ample CPU and memory.
    pub fn throughput(&self, gpus: u32, nodes: u32, local_batch: f64) -> f64 {
        if gpus == 0 || local_batch <= 0.0 {
            return 0.0;
        }
        let t = self.step_time.step_time(gpus, nodes, local_batch);
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
