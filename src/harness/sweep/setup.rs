//! What a sweep settles before its first launch: the Slurm step's caps, the dataset, the CPU
//! and memory levels, the CPU search, the storage throttle, GPU telemetry and the mode.

use super::live_check::LiveCheckState;
use super::{
    SlurmStep, SweepError, SweepObserver, SweepOptions, render_all, search, total_memory_bytes,
};
use crate::harness::cgroup::CgroupRoot;
use crate::harness::cgroup::effective::EffectiveCaps;
use crate::harness::measure::gpu::GpuMonitor;
use crate::harness::memory::dataset::{
    DatasetSize, block_device_of, ensure_dataset, measure_dataset,
};
use crate::harness::process::job_launch::base_vars;
use crate::harness::sweep::cpu_search::CpuSearch;
use crate::harness::sweep::plan::MemoryLevels;
use crate::spec::{CpuAxis, JobSpec, SweepMode};
use crate::units::GIB;
use std::time::Duration;

/// Inside a Slurm step: the caps of its cgroup, checked to be the step's CPU level.
pub(super) fn step_caps(
    opts: &SweepOptions,
    step: &SlurmStep,
) -> Result<(SlurmStep, EffectiveCaps), SweepError> {
    let caps = EffectiveCaps::of_self()
        .map_err(|e| SweepError::Plan(format!("in the Slurm step: reading its caps: {e}")))?;
    caps.check(step.cpu, None).map_err(|e| {
        SweepError::Plan(format!(
            "in the Slurm step: refusing to measure cpu = {}: {e} (Slurm must confine steps: \
             TaskPlugin=task/cgroup with ConstrainCores=yes)",
            step.cpu
        ))
    })?;
    if let CpuAxis::Search(_) = &opts.spec.spec.sweep.cpu {
        return Err(SweepError::Plan(
            "a Slurm step measures one CPU level; the spec's CPU search cannot run in one".into(),
        ));
    }
    Ok((step.clone(), caps))
}

/// The spec's dataset, generated where missing, and measured.
pub(super) fn dataset(
    opts: &SweepOptions,
    observer: &mut dyn SweepObserver,
) -> Result<Option<DatasetSize>, SweepError> {
    let (Some(path), Some(d)) = (&opts.spec.dataset_path, &opts.spec.spec.dataset) else {
        return Ok(None);
    };
    let generate = d
        .generate
        .as_ref()
        .map(|argv| render_all(argv, &base_vars(&opts.spec), &opts.spec.path))
        .transpose()?;
    if !path.exists() {
        observer.status(&format!("generating dataset {}", path.display()));
    }
    ensure_dataset(path, generate.as_deref(), &opts.spec.working_dir)?;
    Ok(Some(measure_dataset(path)?))
}

/// The spec's CPU levels, largest first (none under a search); a Slurm step's one level.
pub(super) fn cpu_levels(spec: &JobSpec, step: Option<&(SlurmStep, EffectiveCaps)>) -> Vec<f64> {
    if let Some((step, _)) = step {
        return vec![step.cpu];
    }
    let mut levels = match &spec.sweep.cpu {
        CpuAxis::Levels(levels) => levels.clone(),
        CpuAxis::Search(_) => Vec::new(),
    };
    levels.sort_by(|a, b| b.total_cmp(a));
    levels.dedup();
    levels
}

/// The memory levels, largest first: the spec's GiB, or its shares of the dataset; with
/// neither, one level, the machine's memory (in a Slurm step, the memory Slurm gave it); in a
/// Slurm step of a sweep whose first step fixed them, those.
pub(super) fn memory_levels(
    spec: &JobSpec,
    dataset: Option<&DatasetSize>,
    step: Option<&(SlurmStep, EffectiveCaps)>,
) -> MemoryLevels {
    if let Some(levels) = step.and_then(|(s, _)| s.memory_levels.clone()) {
        return MemoryLevels::Bytes(levels);
    }
    match (&spec.sweep.memory_gib, &spec.sweep.memory_pct_of_dataset) {
        (Some(g), _) => {
            let mut b: Vec<u64> = g.iter().map(|g| (g * GIB) as u64).collect();
            b.sort_unstable_by(|a, b| b.cmp(a));
            b.dedup();
            MemoryLevels::Bytes(b)
        }
        (None, Some(p)) => {
            let mut pct = p.clone();
            pct.sort_by(|a, b| b.total_cmp(a));
            pct.dedup();
            let dataset_bytes = spec
                .dataset
                .as_ref()
                .and_then(|d| d.bytes)
                .or(dataset.map(|d| d.bytes));
            MemoryLevels::PctOfDataset {
                pct,
                dataset_bytes: dataset_bytes.unwrap_or(0),
            }
        }
        (None, None) => MemoryLevels::Bytes(vec![
            step.and_then(|(_, caps)| caps.memory_limit)
                .unwrap_or_else(total_memory_bytes),
        ]),
    }
}

/// The spec's CPU search, configured for the CPUs available here; an error where the highest
/// level asked for is more than there are.
pub(super) fn cpu_search(
    opts: &SweepOptions,
    cpu_levels: &[f64],
    root: Option<&CgroupRoot>,
    step: Option<&(SlurmStep, EffectiveCaps)>,
) -> Result<Option<CpuSearch>, SweepError> {
    let spec = &opts.spec.spec;
    let available = match (root, step) {
        (Some(r), _) => r.cpus().len() as f64,
        (None, Some((_, caps))) => caps.cores(),
        (None, None) => crate::machine::available_cpus() as f64,
    };
    let spec_dir = opts.spec.path.parent().unwrap_or(std::path::Path::new("."));
    let search = match &spec.sweep.cpu {
        CpuAxis::Levels(_) => None,
        CpuAxis::Search(s) => Some(
            search::configure(s, spec.gpus, available, (spec_dir, spec.measure.precision))
                .map_err(|e| SweepError::Plan(format!("{}: {e}", opts.spec.path.display())))?,
        ),
    };
    let highest = search
        .as_ref()
        .map_or(cpu_levels.first().copied(), |s| Some(s.max));
    if let Some(too_big) = highest.filter(|c| opts.caps && *c > available) {
        return Err(SweepError::Plan(format!(
            "{}: sweep.cpu level {too_big} exceeds the {available} CPUs available here",
            opts.spec.path.display()
        )));
    }
    Ok(search)
}

/// A block device (`major:minor`) and a read cap on it, bytes/s.
pub(super) type Throttle = ((u64, u64), u64);

/// The dataset's block device and the read cap every run gets, where the spec sets one and
/// the profiler owns the cgroups.
pub(super) fn storage_throttle(
    opts: &SweepOptions,
    in_step: bool,
    observer: &mut dyn SweepObserver,
) -> Result<Option<Throttle>, SweepError> {
    match (
        opts.spec.spec.sweep.storage_read_mb_s,
        &opts.spec.dataset_path,
    ) {
        (Some(mb), Some(_)) if in_step => {
            observer.warn(&format!(
                "sweep.storage_read_mb_s = {mb} is not applied in a Slurm step (Slurm owns its \
                 cgroups): runs read at the node's storage speed"
            ));
            Ok(None)
        }
        (Some(mb), Some(path)) if opts.caps => {
            let dev = block_device_of(path).ok_or_else(|| {
                SweepError::Plan(format!(
                    "sweep.storage_read_mb_s: {} is not on a block device that can be throttled",
                    path.display()
                ))
            })?;
            Ok(Some((dev, (mb * 1e6) as u64)))
        }
        _ => Ok(None),
    }
}

/// GPU telemetry of the spec's GPUs, where NVML loads (else a warning, and none).
pub(super) fn gpu_monitor(spec: &JobSpec, observer: &mut dyn SweepObserver) -> Option<GpuMonitor> {
    if spec.gpus == 0 {
        return None;
    }
    match crate::harness::measure::gpu::open_nvml() {
        Ok(probe) => Some(GpuMonitor::start(
            Box::new(probe),
            (0..spec.gpus).collect(),
            Duration::from_millis(200),
        )),
        Err(e) => {
            observer.warn(&format!("{e}; cells will have no GPU telemetry"));
            None
        }
    }
}

/// Whether launches are re-capped live or relaunched per point, and whether re-capping is
/// still to be checked against a fresh start.
pub(super) fn mode(opts: &SweepOptions, in_step: bool) -> (SweepMode, LiveCheckState) {
    let spec = &opts.spec.spec;
    let mut mode = opts.mode.unwrap_or(spec.sweep.mode);
    if spec.sweep.adapts_to_caps == Some(false) {
        mode = SweepMode::Relaunch;
    }
    // Only a launch that re-caps its CPU needs the check: not when the command follows the CPU
    // level (a launch per level), nor when the spec vouches for the job.
    let live_check = if mode == SweepMode::Live
        && spec.sweep.adapts_to_caps.is_none()
        && !opts.spec.depends_on_cpu_level()
        && !in_step
    {
        LiveCheckState::Pending {
            earlier: Vec::new(),
        }
    } else {
        LiveCheckState::NotNeeded
    };
    (mode, live_check)
}
