//! What NVML says about the driver and the GPUs, and whether GPM (per-SM activity, Hopper and
//! later) can be sampled. Behind [`GpuInventory`] so the verdicts are tested without a GPU.

use super::{Check, Verdict};
use crate::harness::measure::gpu::{GpuProbe, nvml, open_nvml};
use std::time::Duration;

/// Driver-wide facts and one entry per GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuFacts {
    pub driver_version: String,
    pub nvml_version: String,
    /// CUDA version the driver supports, `12.4`.
    pub cuda_driver_version: String,
    pub devices: Vec<DeviceFacts>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeviceFacts {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub memory_total_bytes: u64,
    /// `9.0` for Hopper.
    pub compute_capability: String,
    pub gpm_supported: bool,
    /// MIG mode currently enabled: telemetry is then of the whole GPU, not of a slice.
    pub mig_enabled: bool,
}

/// Reads GPU facts (NVML here, a fake in tests).
pub trait GpuInventory {
    /// The facts, or why NVML is unusable ("libnvidia-ml.so.1 not found").
    fn facts(&self) -> Result<GpuFacts, String>;
    /// GPM SM activity of GPU `index` over a short interval, percent.
    fn gpm_sm_activity(&self, index: u32) -> Result<f64, String>;
}

/// [`GpuInventory`] through NVML, loaded at run time.
pub struct NvmlInventory;

impl GpuInventory for NvmlInventory {
    fn facts(&self) -> Result<GpuFacts, String> {
        let nvml = nvml().map_err(|e| e.to_string())?;
        let text = |r: Result<String, _>| r.unwrap_or_else(|e| format!("unknown ({e})"));
        let cuda = nvml
            .sys_cuda_driver_version()
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10))
            .unwrap_or_else(|e| format!("unknown ({e})"));
        let count = nvml
            .device_count()
            .map_err(|e| format!("device count: {e}"))?;
        let devices = (0..count)
            .map(|index| {
                let d = nvml
                    .device_by_index(index)
                    .map_err(|e| format!("GPU {index}: {e}"))?;
                Ok(DeviceFacts {
                    index,
                    name: text(d.name()),
                    uuid: text(d.uuid()),
                    memory_total_bytes: d.memory_info().map_or(0, |m| m.total),
                    compute_capability: d
                        .cuda_compute_capability()
                        .map(|c| format!("{}.{}", c.major, c.minor))
                        .unwrap_or_else(|_| "unknown".into()),
                    gpm_supported: d.gpm_support().unwrap_or(false),
                    mig_enabled: d.mig_mode().is_ok_and(|m| m.current == 1),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(GpuFacts {
            driver_version: text(nvml.sys_driver_version()),
            nvml_version: text(nvml.sys_nvml_version()),
            cuda_driver_version: cuda,
            devices,
        })
    }

    fn gpm_sm_activity(&self, index: u32) -> Result<f64, String> {
        // GPM reports activity between two samples: the sweep's own probe, read twice.
        let mut probe = open_nvml().map_err(|e| e.to_string())?;
        probe.read(&[index]).map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(500));
        let reading = probe.read(&[index]).map_err(|e| e.to_string())?;
        reading
            .sm_activity_pct
            .ok_or_else(|| "GPM returned no SM activity".to_string())
    }
}

use crate::units::GIB;

/// The driver, NVML and every GPU, or why there is none.
pub fn driver_check(facts: &Result<GpuFacts, String>) -> Check {
    const NAME: &str = "NVIDIA driver and NVML";
    match facts {
        Err(why) => Check::with(
            NAME,
            Verdict::Fail,
            vec![format!("no GPU telemetry on this machine: {why}")],
            "on a GPU server, install the NVIDIA driver (it ships libnvidia-ml.so.1) and check \
             that `nvidia-smi` lists the GPUs; on a machine without a GPU, only CPU jobs \
             (gpus = 0) can be profiled",
        ),
        Ok(f) if f.devices.is_empty() => Check::with(
            NAME,
            Verdict::Fail,
            vec![format!(
                "driver {}, NVML {}, but NVML sees no GPU",
                f.driver_version, f.nvml_version
            )],
            "check `nvidia-smi`; in a container, pass the GPUs in (--gpus all)",
        ),
        Ok(f) => {
            let mut facts = vec![format!(
                "driver {}, NVML {}, CUDA {} supported by the driver",
                f.driver_version, f.nvml_version, f.cuda_driver_version
            )];
            facts.extend(f.devices.iter().map(|d| {
                format!(
                    "GPU {}: {}, {:.0} GiB, compute capability {}, {}{}",
                    d.index,
                    d.name,
                    d.memory_total_bytes as f64 / GIB,
                    d.compute_capability,
                    d.uuid,
                    if d.mig_enabled { ", MIG enabled" } else { "" }
                )
            }));
            if f.devices.iter().any(|d| d.mig_enabled) {
                Check::with(
                    NAME,
                    Verdict::Warn,
                    facts,
                    "MIG is enabled: NVML's utilization and power are of the whole GPU, not of \
                     the slice a job runs on; profile on a GPU with MIG disabled",
                )
            } else {
                Check::pass(NAME, facts)
            }
        }
    }
}

/// Whether GPM can be sampled on the first GPU (what a job with `gpus = 1` runs on).
pub fn gpm_check(facts: &Result<GpuFacts, String>, gpus: &dyn GpuInventory) -> Check {
    const NAME: &str = "GPM (per-SM activity)";
    let Some(first) = facts.as_ref().ok().and_then(|f| f.devices.first()) else {
        return Check::with(
            NAME,
            Verdict::Skip,
            vec!["no GPU".into()],
            "needs an NVIDIA GPU and its driver",
        );
    };
    if !first.gpm_supported {
        return Check::with(
            NAME,
            Verdict::Warn,
            vec![format!(
                "GPU {} ({}, compute capability {}) has no GPM",
                first.index, first.name, first.compute_capability
            )],
            "GPM needs Hopper (compute capability 9.0) or later and a driver of R520 or later; \
             cells get NVML's utilization, clocks, memory and power without SM activity",
        );
    }
    match gpus.gpm_sm_activity(first.index) {
        Ok(pct) if pct.is_finite() && (0.0..=100.0).contains(&pct) => Check::pass(
            NAME,
            vec![format!(
                "GPU {}: SM activity {pct:.1}% over 0.5 s (idle is near 0)",
                first.index
            )],
        ),
        Ok(pct) => Check::with(
            NAME,
            Verdict::Fail,
            vec![format!(
                "GPU {}: SM activity {pct} is not a percentage",
                first.index
            )],
            "update the NVIDIA driver",
        ),
        Err(why) => Check::with(
            NAME,
            Verdict::Fail,
            vec![format!(
                "GPU {} supports GPM but sampling failed: {why}",
                first.index
            )],
            "GPM sampling needs root (or the driver's profiling permission, \
             NVreg_RestrictProfilingToAdminUsers=0); stop other profilers (DCGM, Nsight) that \
             hold the GPU's performance counters",
        ),
    }
}
