//! Pollux's step-time model (OSDI'21, AdaptDL's `goodput.py`): compute time linear in the local
//! batch; synchronisation time zero on one GPU, else linear in the replicas beyond two, with
//! different constants within one server and across servers; the two combined with an exponent
//! gamma that says how much they overlap (1: not at all, large: fully).

/// Parameters, seconds (`*_per_sample` in seconds per sample, `*_per_replica` per replica).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepTimeModel {
    pub compute_s: f64,
    pub compute_s_per_sample: f64,
    pub sync_local_s: f64,
    pub sync_local_s_per_replica: f64,
    pub sync_node_s: f64,
    pub sync_node_s_per_replica: f64,
    pub gamma: f64,
}

impl StepTimeModel {
    /// Seconds of one forward and backward pass of `local_batch` samples on one GPU.
    pub fn compute_time(&self, local_batch: f64) -> f64 {
        self.compute_s + self.compute_s_per_sample * local_batch
    }

    /// Seconds per step of `replicas` GPUs on `nodes` servers at `local_batch` per GPU.
    pub fn step_time(&self, replicas: u32, nodes: u32, local_batch: f64) -> f64 {
        let compute = self.compute_time(local_batch);
        let beyond_two = replicas.saturating_sub(2) as f64;
        let sync = if replicas <= 1 {
            0.0
        } else if nodes <= 1 {
            self.sync_local_s + self.sync_local_s_per_replica * beyond_two
        } else {
            self.sync_node_s + self.sync_node_s_per_replica * beyond_two
        };
        let g = self.gamma.max(1.0);
        (compute.max(0.0).powf(g) + sync.max(0.0).powf(g)).powf(1.0 / g)
    }
}
