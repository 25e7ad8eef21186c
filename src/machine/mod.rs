//! Facts about the machine a matrix is measured on, and its machine kind.

mod cpu;
mod storage;

pub use cpu::{parse_cpuinfo, this_processor};
pub use storage::storage_of;

use crate::harness::measure::gpu::nvml_devices;
use crate::matrix::MachineInfo;
use sysinfo::{CpuRefreshKind, System};

/// Describes this machine. `cgroup` is recorded as given (`v1`, `v2` or `none`).
///
/// * `cpus`: logical CPUs of the machine (not of this process; see [`available_cpus`]);
/// * `memory_bytes`: physical RAM, ignoring any cgroup limit;
/// * `gpus`: NVML device names, empty when NVML is unavailable;
/// * `kind`: the machine-kind key ([`MachineInfo::derive_kind`]).
///
/// The memory bandwidth and the dataset's storage are a sweep's to add.
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
    let gpu_devices = nvml_devices();
    let mut machine = MachineInfo {
        hostname: known(System::host_name()),
        cpus,
        memory_bytes,
        kernel: known(System::kernel_version()),
        cgroup: cgroup.to_string(),
        gpus: gpu_devices.iter().map(|g| g.name.clone()).collect(),
        processor: this_processor(),
        gpu_devices,
        ..MachineInfo::default()
    };
    machine.kind = machine.derive_kind();
    machine
}

/// The machine this process runs on, as [`describe_machine`] gives it with the cgroup version
/// the profiler's caps use here.
pub fn this_machine() -> MachineInfo {
    let cgroup = if cgroups_rs::fs::hierarchies::is_cgroup2_unified_mode() {
        "v2"
    } else {
        "v1"
    };
    describe_machine(cgroup)
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
        let key = m.kind.expect("this machine's processor reads");
        assert!(
            key.contains(&format!("-{}t-", m.processor.unwrap().threads)),
            "{key}"
        );
    }

    #[test]
    fn available_cpus_positive() {
        assert!(available_cpus() >= 1);
    }
}
