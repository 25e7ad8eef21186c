//! A job as the replay sees it.

/// One job of a workload. Work is in samples (iterations x batch per GPU x GPUs).
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub id: u64,
    /// Model name as given by the trace (aliases resolved when the job is bound to a profile).
    pub model: String,
    pub arrival_s: f64,
    pub gpus: u32,
    pub work_samples: f64,
    /// CPU cores requested by the trace (Alibaba), informational.
    pub cpu_request: Option<f64>,
    /// Memory requested by the trace (Alibaba), GB, informational.
    pub mem_request_gb: Option<f64>,
}
