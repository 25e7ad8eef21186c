//! Facts about the machine a matrix is measured on.

use crate::harness::measure::gpu::nvml_device_names;
use crate::matrix::MachineInfo;
use sysinfo::{CpuRefreshKind, System};

/// Describes this machine. `cgroup` is recorded as given (`v1`, `v2` or `none`).
///
/// * `cpus`: logical CPUs of the machine (not of this process; see [`available_cpus`]);
/// * `memory_bytes`: physical RAM, ignoring any cgroup limit;
/// * `gpus`: NVML device names, empty when NVML is unavailable.
///
/// Never fails: what cannot be read is reported as `"unknown"` (text) or falls back to
/// [`available_cpus`] / 0.
pub fn describe_machine(cgroup: &str) -> MachineInfo {
    let (cpus, memory_bytes) = match System::new() {
        Ok(mut sys) => {
            sys.refresh_memory();
            sys.refresh_cpu_list(CpuRefreshKind::nothing());
            (sys.cpus().len(), sys.total_memory())
        }
        Err(_) => (0, 0),
    };
    let cpus = match u32::try_from(cpus) {
        Ok(n) if n > 0 => n,
        _ => available_cpus(),
    };
    let known = |r: Result<String, sysinfo::Error>| match r {
        Ok(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => "unknown".to_string(),
    };
    MachineInfo {
        hostname: known(System::host_name()),
        cpus,
        memory_bytes,
        kernel: known(System::kernel_version()),
        cgroup: cgroup.to_string(),
        gpus: nvml_device_names(),
    }
}

/// CPUs this process may use (affinity mask and cgroup CPU quota, as
/// [`std::thread::available_parallelism`] sees them), at least 1.
pub fn available_cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_this_machine() {
        let m = describe_machine("v2");
        assert!(!m.hostname.is_empty());
        assert!(
            !m.kernel.is_empty() && m.kernel != "unknown",
            "{}",
            m.kernel
        );
        assert!(m.cpus > 0);
        assert!(m.memory_bytes > 0);
        assert_eq!(m.cgroup, "v2");
        assert!(m.cpus >= available_cpus() || m.cpus > 0);
        assert!(m.gpus.iter().all(|g| !g.is_empty()));
    }

    #[test]
    fn available_cpus_positive() {
        assert!(available_cpus() >= 1);
    }
}
