//! The short GPU sweep: the job spec (`workloads/resnet18.toml`) at its lowest CPU level and
//! the highest this machine has, at full memory, with shorter measurements, then every cell
//! checked for a rate and for NVML (and GPM) telemetry.

use super::{Check, DoctorOptions, Verdict};
use crate::harness::sweep::{SweepObserver, SweepOptions, run_sweep};
use crate::matrix::{Cell, CellSource};
use crate::spec::{CpuAxis, LoadedSpec, SpecError, SweepMode};
use std::sync::atomic::AtomicBool;

const NAME: &str = "GPU sweep";

/// What the checks before this one found.
#[derive(Debug, Clone, Copy)]
pub struct Readiness {
    pub gpus: usize,
    /// The first GPU supports GPM: every cell must then carry SM activity.
    pub gpm: bool,
    pub torch_cuda: bool,
    pub caps: bool,
}

pub fn check(
    opts: &DoctorOptions,
    spec: Result<LoadedSpec, SpecError>,
    ready: Readiness,
    observer: &mut dyn SweepObserver,
    cancel: &AtomicBool,
) -> Check {
    let skip = |why: &str, fix: &str| Check::with(NAME, Verdict::Skip, vec![why.into()], fix);
    let spec = match spec {
        Ok(spec) => spec,
        Err(e) => {
            return Check::with(
                NAME,
                Verdict::Fail,
                vec![e.to_string()],
                "copy workloads/ (the specs and workloads/pytorch/) next to the profiler binary \
                 and run it from there, or pass --job",
            );
        }
    };
    if !opts.sweep {
        return skip("not run (--no-sweep)", "run without --no-sweep");
    }
    if ready.gpus == 0 {
        return skip(
            "no GPU on this machine: the short sweep needs one (the checks above cover the rest)",
            "run `profiler doctor` on the GPU server",
        );
    }
    if !ready.caps {
        return skip("the cgroup checks failed", "fix the cgroup checks above");
    }
    if !ready.torch_cuda {
        return skip("PyTorch sees no GPU", "fix the PyTorch check above");
    }
    let mut short = spec;
    let levels = shorten(&mut short, crate::machine::available_cpus() as f64);
    let output = opts
        .output_dir
        .join(format!("{}.matrix.jsonl", short.spec.name));
    let sweep = SweepOptions {
        spec: short,
        output: output.clone(),
        resume: false,
        caps: true,
        mode: Some(SweepMode::Relaunch),
        memory_axis: None,
        cgroup_parent: opts.cgroup_parent.clone(),
        kinds: crate::matrix::cell_model::KindSpeeds::default(),
    };
    let _ = std::fs::remove_file(&output);
    match run_sweep(&sweep, observer, cancel) {
        Ok(outcome) => judge(&outcome.matrix.cells, &levels, ready.gpm, &output),
        Err(e) => Check::with(
            NAME,
            Verdict::Fail,
            vec![e.to_string()],
            "read the job's log next to the matrix (the .logs directory); \
             `profiler sweep --job SPEC --no-caps` runs the job once without caps",
        ),
    }
}

/// Cuts the spec down to a check: at most two CPU levels (the lowest, and the highest the
/// machine has), the top memory level only, measurements of well under a minute. Returns the
/// CPU levels.
pub fn shorten(spec: &mut LoadedSpec, available: f64) -> Vec<f64> {
    let s = &mut spec.spec;
    let fits: Vec<f64> = match &s.sweep.cpu {
        CpuAxis::Levels(l) => l.iter().copied().filter(|c| *c <= available).collect(),
        CpuAxis::Search(search) => [search.min, search.max]
            .into_iter()
            .flatten()
            .filter(|c| *c <= available)
            .collect(),
    };
    let lowest = fits.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = fits.iter().copied().fold(0.0, f64::max);
    let mut levels = if fits.is_empty() {
        vec![available.floor().max(1.0)]
    } else {
        vec![lowest, highest]
    };
    levels.dedup();
    s.sweep.cpu = CpuAxis::Levels(levels.clone());
    s.sweep.memory_gib = None;
    s.sweep.memory_pct_of_dataset = None;
    s.sweep.params = s
        .sweep
        .params
        .iter()
        .map(|(k, v)| (k.clone(), v.iter().take(1).cloned().collect()))
        .collect();
    let m = &mut s.measure;
    m.warmup_s = m.warmup_s.min(20.0);
    m.settle_s = m.settle_s.min(5.0);
    m.steady_windows = m.steady_windows.min(3);
    m.max_s = m.max_s.min(45.0).max(m.window_s * 3.0);
    s.name = format!("doctor-{}", s.name);
    levels
}

/// Every CPU level measured, with GPU telemetry (and GPM SM activity where the GPU has it).
fn judge(cells: &[Cell], levels: &[f64], gpm: bool, output: &std::path::Path) -> Check {
    let mut facts = Vec::new();
    let mut problems = Vec::new();
    for &cpu in levels {
        let Some(cell) = cells
            .iter()
            .find(|c| (c.cpu - cpu).abs() < 1e-9 && c.source != CellSource::Modelled)
        else {
            problems.push(format!("{cpu} CPUs: no cell"));
            continue;
        };
        let rate = cell.samples_per_s();
        let gpu = cell.gpu.as_ref();
        facts.push(format!(
            "{cpu} CPUs: {}{}",
            rate.map_or_else(
                || format!(
                    "{}: {}",
                    cell.source.as_str(),
                    cell.note.as_deref().unwrap_or("")
                ),
                |r| format!("{r:.1} samples/s")
            ),
            gpu.map_or(", no GPU telemetry".to_string(), |g| format!(
                ", GPU utilization {:.0}%, SM clock {:.0} MHz, {:.1} GiB, {:.0} W{}",
                g.utilization_pct,
                g.sm_clock_mhz,
                g.memory_used_bytes as f64 / crate::units::GIB,
                g.power_w,
                g.sm_activity_pct
                    .map_or(String::new(), |a| format!(", SM activity {a:.0}% (GPM)"))
            ))
        ));
        if cell.source != CellSource::Measured || rate.is_none() {
            problems.push(format!("{cpu} CPUs: the job was not measured"));
        }
        match gpu {
            None => problems.push(format!("{cpu} CPUs: no NVML telemetry in the cell")),
            Some(g) if g.utilization_pct <= 0.0 => problems.push(format!(
                "{cpu} CPUs: GPU utilization 0: the job ran on the CPU"
            )),
            Some(g) if gpm && g.sm_activity_pct.is_none() => {
                problems.push(format!("{cpu} CPUs: no GPM SM activity in the cell"))
            }
            Some(_) => {}
        }
    }
    facts.push(format!("matrix: {}", output.display()));
    if problems.is_empty() {
        Check::pass(NAME, facts)
    } else {
        facts.extend(problems);
        Check::with(
            NAME,
            Verdict::Fail,
            facts,
            "read the job's log in the .logs directory beside the matrix; a job on the CPU \
             means torch did not get the GPU (CUDA_VISIBLE_DEVICES, the driver)",
        )
    }
}
