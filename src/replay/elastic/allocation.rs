//! What an elastic scheduler decides for one job (whether a whole decision fits the cluster is
//! [`super::feasibility`]).

/// One job's allocation: GPUs on each server it spans, the global batch it runs, and the CPU
/// cores and GB of memory it gets per GPU (on every server it spans).
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// (server index, GPUs there), ascending by server, no zero counts.
    pub gpus_per_server: Vec<(usize, u32)>,
    pub global_batch: u32,
    pub cpus_per_gpu: f64,
    pub mem_gb_per_gpu: f64,
}

impl Allocation {
    pub fn gpus(&self) -> u32 {
        self.gpus_per_server.iter().map(|&(_, g)| g).sum()
    }

    /// Servers spanned.
    pub fn nodes(&self) -> u32 {
        self.gpus_per_server.len() as u32
    }

    /// Per-GPU (local) batch.
    pub fn local_batch(&self) -> f64 {
        self.global_batch as f64 / self.gpus().max(1) as f64
    }

    /// Same GPUs on the same servers: nothing to restart. A new global batch is applied
    /// between steps (AdaptDL re-tunes batch and accumulation without a restart), CPU and memory
    /// changes live (as cgroup limits are).
    pub fn same_placement(&self, other: &Allocation) -> bool {
        self.gpus_per_server == other.gpus_per_server
    }
}
