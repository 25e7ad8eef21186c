//! Why a validated cell's prediction is off, from the cell's own telemetry. The cache model
//! rests on four assumptions; each has a measured counterpart in the cell:
//!
//! - **cache share**: the cache holds `x = (limit - resident) / dataset`, with `resident` the
//!   top cell's memory besides the dataset; measured: the dataset's bytes in the page cache at
//!   the end of the window (`dataset_cached_bytes`).
//! - **hit ratio**: the model's `h(x)` (LRU under per-epoch shuffles for `page-cache`);
//!   measured: `1 - storage reads / (rate x bytes per sample)`. Where storage read more than a
//!   sample for each sample, that is said instead: a memory map's read-around, or data read
//!   ahead and evicted before it was used.
//! - **storage rate**: the bandwidth measured once per sweep; measured: the cell's read rate,
//!   where the model has storage set the rate and the cell misses enough to matter.
//! - **CPU per sample**: the top cell's; measured: the cell's CPU time per sample. Each page
//!   read from storage costs CPU the model does not count (a page fault or a read, the I/O's
//!   completion, reclaiming a page under the cap): the explanation gives that cost per page,
//!   how much of the extra time the kernel spent (system time) against the job's own code
//!   (user time: its work, or threads spinning while they wait), and how much of its CPUs the
//!   job used, which says whether it could have gone faster.
//!
//! Besides the model's assumptions, the machine: the cell and its top cell may have run at
//! different CPU speeds (a virtual machine's host loaded by other guests), which the profiler's
//! reference loop shows ([`crate::harness::measure::cpu_speed`]).
//!
//! The explanation names the assumption that is furthest off, with both figures, and the
//! machine's speed where it moved and is not that assumption.

use crate::cache_model::CacheModel;
use crate::matrix::{Cell, CellCheck, Telemetry};

/// Deviations below these are not worth naming: shares of the dataset or of reads...
pub const SHARE_TOLERANCE: f64 = 0.05;
/// ... and relative differences of rates.
const RATE_TOLERANCE: f64 = 0.10;
/// Storage rates are compared only where at least this share of reads misses the cache.
const MIN_MISS_FOR_STORAGE: f64 = 0.1;
/// CPU time per page read is given only where a sample reads at least this many more pages
/// from storage than at the top level.
const MIN_PAGES_PER_SAMPLE: f64 = 0.1;
/// The unit the cost of a read is given in.
const PAGE_BYTES: f64 = 4096.0;
/// A change of the machine's CPU speed below this is not worth naming.
const SPEED_TOLERANCE: f64 = 0.05;

/// Extra CPU time per sample, as a part of the top level's, below which where it went is not
/// said.
const MIN_EXTRA_CPU: f64 = 0.02;

/// The check of `cell` (measured at a lower memory level) against what `model` assumed from
/// `top` (the same CPU level, all memory); `dataset_samples` the samples of one epoch.
pub fn check(cell: &Cell, top: &Cell, model: &CacheModel, dataset_samples: u64) -> CellCheck {
    let dataset = model.inputs.dataset_bytes as f64;
    let pair = Pair {
        cell,
        t: cell.telemetry.as_ref(),
        top_t: top.telemetry.as_ref(),
        rate: cell.samples_per_s().unwrap_or(0.0),
        top_rate: top.samples_per_s().unwrap_or(0.0),
    };
    let (t, top_t, rate) = (pair.t, pair.top_t, pair.rate);
    let resident = top_t.map_or(0, |t| t.resident_besides_dataset());
    let cache_modelled = (dataset > 0.0)
        .then(|| (cell.memory_bytes.saturating_sub(resident) as f64 / dataset).clamp(0.0, 1.0));
    let cache_measured = t
        .and_then(|t| t.dataset_cached_bytes)
        .filter(|_| dataset > 0.0)
        .map(|c| (c as f64 / dataset).clamp(0.0, 1.0));
    let bytes_per_sample = (dataset_samples > 0).then(|| dataset / dataset_samples as f64);
    // Storage bytes per sample over the bytes of a sample: one minus the hit ratio, or more
    // than one where a miss reads more than the sample (a memory map's read-around) or data
    // is read twice (read ahead, then evicted before it was used).
    let reads_measured = match (t, bytes_per_sample) {
        (Some(t), Some(b)) if rate > 0.0 => Some(t.storage_read_bytes_per_s / (rate * b)),
        _ => None,
    };
    let reads_modelled = cache_modelled.map(|x| model.read_fraction(x, dataset_samples));
    let hit = |reads: f64| (1.0 - reads).clamp(0.0, 1.0);
    let (hit_measured, hit_modelled) = (reads_measured.map(hit), reads_modelled.map(hit));
    let storage_measured = t.map(|t| t.storage_read_bytes_per_s);
    let storage_modelled = Some(model.storage_bytes_per_s()).filter(|b| b.is_finite() && *b > 0.0);
    let cpu = CpuFigures::of(&pair, model, dataset_samples, reads_modelled);
    let cpu_speed_vs_top = machine_speed_vs_top(t, top_t);
    let (predicted, storage_bound) = prediction(&pair, model, resident, dataset_samples);
    let mut check = CellCheck {
        cache_share_measured: cache_measured,
        cache_share_modelled: cache_modelled,
        hit_ratio_measured: hit_measured,
        hit_ratio_modelled: hit_modelled,
        storage_bytes_per_s_measured: storage_measured,
        storage_bytes_per_s_modelled: storage_modelled,
        cpu_per_sample_vs_top: cpu.vs_top,
        cpu_per_sample_vs_top_modelled: cpu.vs_top_modelled,
        extra_cpu_in_kernel: cpu.extra_in_kernel,
        cpu_speed_vs_top,
        explanation: String::new(),
    };
    let evidence = Evidence {
        storage_bound,
        error: predicted.map_or(0.0, |p| p - rate),
        resident_top: resident,
        resident_here: t.map(|t| t.resident_besides_dataset()),
        reads_per_sample: reads_measured.zip(reads_modelled),
        cpu_use: cpu.cpu_use,
    };
    check.explanation = explain(&check, &evidence);
    check
}

/// A cell and the top cell it is checked against: their telemetry and rates.
struct Pair<'a> {
    cell: &'a Cell,
    t: Option<&'a Telemetry>,
    top_t: Option<&'a Telemetry>,
    /// Samples/s, 0 where not measured.
    rate: f64,
    top_rate: f64,
}

/// Seconds per sample of a figure in cores, where it is finite.
fn per_sample(t: Option<&Telemetry>, r: f64, cores: fn(&Telemetry) -> Option<f64>) -> Option<f64> {
    t.and_then(cores).map(|c| c / r).filter(|s| s.is_finite())
}

/// What the cell's CPU time per sample says against its top cell's.
struct CpuFigures {
    /// The cell's CPU time per sample over the top cell's.
    vs_top: Option<f64>,
    /// What the model expects of that ratio.
    vs_top_modelled: Option<f64>,
    /// Of the extra CPU time per sample, the kernel's part.
    extra_in_kernel: Option<f64>,
    cpu_use: Option<CpuUse>,
}

impl CpuFigures {
    fn of(p: &Pair, model: &CacheModel, dataset_samples: u64, reads_modelled: Option<f64>) -> Self {
        let (t, top_t, rate, top_rate) = (p.t, p.top_t, p.rate, p.top_rate);
        let cpu_per_sample = |t: Option<&Telemetry>, r: f64| {
            per_sample(t, r, |t| Some(t.cpu_cores_used)).filter(|c| *c > 0.0)
        };
        let (cpu_here, cpu_top) = (cpu_per_sample(t, rate), cpu_per_sample(top_t, top_rate));
        let vs_top = match (cpu_here, cpu_top) {
            (Some(c), Some(c0)) => Some(c / c0),
            _ => None,
        };
        // What the model expects of it: each sample's worth read costing what it cost in the
        // calibration cell.
        let vs_top_modelled = match (
            model.cpu_per_read_s(dataset_samples),
            cpu_top,
            reads_modelled,
        ) {
            (Some(per_read), Some(c0), Some(reads)) => Some(1.0 + reads * per_read / c0),
            _ => None,
        };
        // The CPU time each page read from storage added, against the top level's.
        let cpu_per_page = match (t, top_t, cpu_here, cpu_top) {
            (Some(t), Some(t0), Some(c), Some(c0)) => {
                let pages = (t.storage_read_bytes_per_s / rate
                    - t0.storage_read_bytes_per_s / top_rate)
                    / PAGE_BYTES;
                (pages >= MIN_PAGES_PER_SAMPLE).then(|| (c - c0) / pages)
            }
            _ => None,
        };
        let system_per_sample =
            |t: Option<&Telemetry>, r: f64| per_sample(t, r, |t| t.cpu_system_cores);
        let extra_in_kernel = match (
            system_per_sample(t, rate),
            system_per_sample(top_t, top_rate),
            cpu_here,
            cpu_top,
        ) {
            (Some(s), Some(s0), Some(c), Some(c0)) if c > c0 * (1.0 + MIN_EXTRA_CPU) => {
                Some((s - s0) / (c - c0))
            }
            _ => None,
        };
        let cpu_use = t.map(|t| CpuUse {
            used: t.cpu_cores_used,
            cap: p.cell.cpu,
            per_page_s: cpu_per_page,
        });
        CpuFigures {
            vs_top,
            vs_top_modelled,
            extra_in_kernel,
            cpu_use,
        }
    }
}

/// The top cell's reference loop time over this cell's: below 1, the CPUs ran slower here.
fn machine_speed_vs_top(t: Option<&Telemetry>, top_t: Option<&Telemetry>) -> Option<f64> {
    match (
        t.and_then(|t| t.reference_loop_ns),
        top_t.and_then(|t| t.reference_loop_ns),
    ) {
        (Some(here), Some(there)) if here > 0.0 && there > 0.0 => Some(there / here),
        _ => None,
    }
}

/// The model's prediction for the cell from its top cell, and whether storage sets it: only
/// where the model, leaving out what reads cost in CPU time, predicts less than the top cell's.
fn prediction(
    pair: &Pair,
    model: &CacheModel,
    resident: u64,
    dataset_samples: u64,
) -> (Option<f64>, bool) {
    let predict = |cores_used: Option<f64>| {
        model
            .predict_samples_per_s(
                pair.top_rate,
                pair.cell.cpu,
                pair.cell.memory_bytes,
                resident,
                dataset_samples,
                cores_used,
            )
            .samples_per_s()
    };
    let predicted = predict(pair.top_t.map(|t| t.cpu_cores_used));
    let storage_bound = predict(None).is_some_and(|p| p < pair.top_rate * (1.0 - 1e-9));
    (predicted, storage_bound)
}

/// How the cell used its CPUs, for the explanation of a CPU cost.
#[derive(Debug, Clone, Copy)]
struct CpuUse {
    used: f64,
    cap: f64,
    /// Seconds of CPU each page read from storage added against the top level.
    per_page_s: Option<f64>,
}

impl CpuUse {
    fn describe(&self) -> String {
        let per_page = self
            .per_page_s
            .filter(|s| *s > 0.0)
            .map_or(String::new(), |s| {
                format!(
                    ", {:.0} µs for each 4 KiB page read from storage (faults or reads, their \
                     completion, reclaim under the cap)",
                    s * 1e6
                )
            });
        let unit = if self.cap == 1.0 { "CPU" } else { "CPUs" };
        format!(
            "{per_page}; the job used {:.2} of its {} {unit}",
            self.used,
            crate::harness::sweep::plan::cpu_text(self.cap)
        )
    }
}

/// Where the extra CPU time went, from its kernel part `k`.
fn in_kernel(k: f64) -> String {
    let k = k.clamp(0.0, 1.0);
    if k >= 0.5 {
        format!(
            ", {:.0}% of the extra in the kernel (system time: faults, reads, reclaim)",
            100.0 * k
        )
    } else {
        format!(
            ", {:.0}% of the extra in the kernel and the rest in the job's own code (user \
             time: its work, or threads that spin while they wait)",
            100.0 * k
        )
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

fn mb(x: f64) -> String {
    format!("{:.1} MB/s", x / 1e6)
}

/// What the explanation needs besides the check's figures.
struct Evidence {
    /// Whether the model has storage set the rate.
    storage_bound: bool,
    /// Predicted minus measured samples/s.
    error: f64,
    /// The job's memory besides the dataset at the top level, and here.
    resident_top: u64,
    resident_here: Option<u64>,
    /// Storage reads per sample over a sample's bytes: measured, modelled.
    reads_per_sample: Option<(f64, f64)>,
    cpu_use: Option<CpuUse>,
}

/// One assumption's deviation: how far past its tolerance, which way it moves the error
/// (predicted minus measured samples/s), and what it is, in words.
type Candidate = (f64, f64, String);

/// The assumption furthest off (by how far past its tolerance) among those that push the
/// prediction the way it is off, in words.
fn explain(c: &CellCheck, e: &Evidence) -> String {
    let share = cache_share_off(c, e).filter(|s| s.0 > 1.0);
    let mut candidates: Vec<Candidate> = [
        share.clone(),
        reads_off(e.reads_per_sample),
        storage_off(c, e.storage_bound),
        cpu_off(c, e.cpu_use),
    ]
    .into_iter()
    .flatten()
    .collect();
    let machine = machine_off(c);
    candidates.extend(machine.clone());
    candidates.retain(|c| c.0 > 1.0);
    // Those that explain the error's sign first, then the furthest off.
    candidates.sort_by(|a, b| {
        let agrees = |c: &Candidate| c.1 * e.error > 0.0;
        agrees(b).cmp(&agrees(a)).then(b.0.total_cmp(&a.0))
    });
    // Hits follow from the share of the dataset cached: where both are off the same way, the
    // share is named first, as the cause.
    let cause = |first: &Candidate| {
        share
            .as_ref()
            .filter(|s| s.2 != first.2 && s.1 * first.1 > 0.0)
            .map_or(first.2.clone(), |s| format!("{}; {}", s.2, first.2))
    };
    match candidates.first().map(|first| (first, cause(first))) {
        // The machine's speed is said beside whatever else is furthest off.
        Some((first, why)) => match machine.filter(|m| m.0 > 1.0 && m.2 != first.2) {
            Some((_, _, speed)) => format!("{why}; {speed}"),
            None => why,
        },
        None if c.cache_share_measured.is_none() && c.cpu_per_sample_vs_top.is_none() => {
            "the cell recorded no telemetry to check the model against".into()
        }
        None => "every assumption held within its tolerance (cache share and hit ratio 5 \
                 points, storage and CPU 10%): the difference is launch-to-launch variation"
            .into(),
    }
}

/// The share of the dataset cached against the model's.
fn cache_share_off(c: &CellCheck, e: &Evidence) -> Option<Candidate> {
    let (Some(m), Some(p)) = (c.cache_share_measured, c.cache_share_modelled) else {
        return None;
    };
    let mut why = format!(
        "the cache held {} of the dataset, the model gave it {}",
        pct(m),
        pct(p)
    );
    if let Some(r) = e.resident_here {
        why.push_str(&format!(
            " (the job's other memory: {:.0} MB here, {:.0} MB at the top level)",
            r as f64 / 1e6,
            e.resident_top as f64 / 1e6
        ));
    }
    // More cached than modelled: more hits, a faster job, a prediction too low.
    Some(((m - p).abs() / SHARE_TOLERANCE, p - m, why))
}

/// Storage reads per sample (measured, modelled) against the model's.
fn reads_off(reads_per_sample: Option<(f64, f64)>) -> Option<Candidate> {
    let (m, p) = reads_per_sample?;
    // Compared as reads per sample, which a hit ratio clamped at 0 would hide: more reads,
    // a slower job, a prediction too high.
    let why = if m.max(p) > 1.0 + SHARE_TOLERANCE {
        let mut why = format!(
            "storage read {m:.2} samples' worth for each sample the job took, the model \
             expects {p:.2}"
        );
        if m > 1.0 + SHARE_TOLERANCE && p <= 1.0 {
            why.push_str(
                ": data read ahead of its use was evicted before it was used and read \
                 again (the job's or the kernel's read-ahead did not fit beside the cache)",
            );
        }
        why
    } else {
        format!(
            "{} of reads hit the cache, the model expects {}",
            pct(1.0 - m),
            pct(1.0 - p)
        )
    };
    Some(((m - p).abs() / SHARE_TOLERANCE, m - p, why))
}

/// The storage rate against the model's, where storage sets the rate and the cell misses
/// enough to matter.
fn storage_off(c: &CellCheck, storage_bound: bool) -> Option<Candidate> {
    if let (Some(m), Some(p), Some(h)) = (
        c.storage_bytes_per_s_measured,
        c.storage_bytes_per_s_modelled,
        c.hit_ratio_measured,
    ) && storage_bound
        && 1.0 - h >= MIN_MISS_FOR_STORAGE
    {
        return Some((
            (m / p - 1.0).abs() / RATE_TOLERANCE,
            p - m,
            format!("storage delivered {}, the model assumes {}", mb(m), mb(p)),
        ));
    }
    None
}

/// CPU time per sample against the top level's, and against what the model expects of it.
fn cpu_off(c: &CellCheck, cpu_use: Option<CpuUse>) -> Option<Candidate> {
    let k = c.cpu_per_sample_vs_top?;
    // More CPU per sample than the model expects: a slower job, a prediction too high.
    let cpu_vs_top_modelled = c.cpu_per_sample_vs_top_modelled.unwrap_or(1.0);
    let expected = match c.cpu_per_sample_vs_top_modelled {
        Some(e) => format!(", the model expects {:+.0}%", 100.0 * (e - 1.0)),
        None => String::new(),
    };
    Some((
        (k - cpu_vs_top_modelled).abs() / RATE_TOLERANCE,
        k - cpu_vs_top_modelled,
        format!(
            "each sample took {:+.0}% CPU time against the top memory level{expected}{}{}",
            100.0 * (k - 1.0),
            c.extra_cpu_in_kernel.map_or(String::new(), in_kernel),
            cpu_use.map_or(String::new(), |u| u.describe())
        ),
    ))
}

/// The machine's CPU speed against while the top cell was measured.
fn machine_off(c: &CellCheck) -> Option<Candidate> {
    c.cpu_speed_vs_top.map(|speed| {
        let why = format!(
            "the machine's CPUs ran {:.0}% {} than while the top cell was measured (the \
             profiler's reference loop took {:.2} times the CPU time it took there)",
            100.0 * (1.0 - speed).abs(),
            if speed < 1.0 { "slower" } else { "faster" },
            1.0 / speed
        );
        // Slower CPUs: a slower job, a prediction too high.
        ((speed - 1.0).abs() / SPEED_TOLERANCE, 1.0 - speed, why)
    })
}

#[cfg(test)]
mod tests;
