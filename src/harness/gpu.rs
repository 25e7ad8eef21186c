//! GPU telemetry (stub until merge)
use crate::matrix::GpuTelemetry;
use std::time::Duration;
#[derive(Debug, thiserror::Error)]
#[error("NVML unavailable")]
pub struct GpuError;
pub trait GpuProbe: Send {}
pub struct NvmlProbe;
impl GpuProbe for NvmlProbe {}
pub fn open_nvml() -> Result<NvmlProbe, GpuError> {
    Err(GpuError)
}
pub struct GpuMonitor;
impl GpuMonitor {
    pub fn start(_p: Box<dyn GpuProbe>, _i: Vec<u32>, _d: Duration) -> Self {
        GpuMonitor
    }
    pub fn reset_window(&self) {}
    pub fn window_summary(&self) -> Option<GpuTelemetry> {
        None
    }
}
