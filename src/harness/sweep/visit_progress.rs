//! A visit in progress: its rate windows and the judge of their disturbance, the
//! samplers of resident memory and CPU speed, the memory peaks, and when it is done.

use super::Run;
use super::disturbance::WindowJudge;
use crate::harness::cgroup::CgroupCounters;
use crate::harness::measure::cpu_speed::SpeedSampler;
use crate::harness::measure::job_output::now_unix_s;
use crate::harness::measure::steady::{MIN_INTERVALS_PER_WINDOW, RateWindows};
use crate::harness::memory::page_cache::Cached;
use crate::harness::memory::resident::ResidentSampler;
use crate::harness::process::tree::TreeUsage;
use crate::matrix::Telemetry;
use crate::spec::MeasureSpec;
use std::time::Instant;

/// Whole epochs of `n` samples to measure over: enough to span the `steady_windows` windows a
/// steady cell would have, at the pace so far (a short epoch alone is a noisy measurement).
fn whole_epochs(n: f64, windows: &RateWindows, elapsed_s: f64, m: &MeasureSpec) -> f64 {
    let gained = windows.gained();
    if gained <= 0.0 || elapsed_s <= 0.0 {
        return 1.0;
    }
    let epoch_s = n * elapsed_s / gained;
    (m.steady_windows as f64 * m.window_s / epoch_s)
        .ceil()
        .max(1.0)
}

/// What a measurement has seen so far.
pub(super) struct Measurement {
    pub(super) windows: RateWindows,
    pub(super) judge: Option<WindowJudge>,
    /// The counters at its start (or, without a cgroup, the process tree's usage).
    start_counters: Option<CgroupCounters>,
    start_usage: TreeUsage,
    clock: Instant,
    /// The epoch it measures over, where the dataset is partly cached.
    pub(super) epoch: Option<f64>,
    /// A later visit of the point, on this launch or another: enough windows, steady or not.
    pub(super) revisit: bool,
    warned_sparse: bool,
    told_rhythm: bool,
    resident: ResidentSampler,
    speed: SpeedSampler,
    rss_peak: u64,
    anon_peak: u64,
    shmem_peak: u64,
    held_sum: u128,
    held_polls: u64,
    pub(super) steady: bool,
}

impl Measurement {
    /// Starts now: its windows, clock and counters; the judge, the epoch and whether it is a
    /// revisit are set by the caller.
    pub(super) fn start(run: &mut Run, m: &MeasureSpec) -> Self {
        let windows = RateWindows::new(now_unix_s(), m.window_s);
        let start_counters = run.counters();
        let start_usage = match start_counters {
            Some(_) => TreeUsage::default(),
            None => run.tree_usage(),
        };
        Measurement {
            windows,
            judge: None,
            start_counters,
            start_usage,
            clock: Instant::now(),
            epoch: None,
            revisit: false,
            warned_sparse: false,
            told_rhythm: false,
            resident: ResidentSampler::default(),
            speed: SpeedSampler::default(),
            rss_peak: 0,
            anon_peak: 0,
            shmem_peak: 0,
            held_sum: 0,
            held_polls: 0,
            steady: false,
        }
    }

    pub(super) fn elapsed_s(&self) -> f64 {
        self.clock.elapsed().as_secs_f64()
    }

    /// Takes the job's new reports into the windows; a window closed while other load took
    /// the job's CPUs is discarded.
    pub(super) fn take_reports(&mut self, run: &mut Run) {
        for r in run.poll() {
            let closed = self.windows.closed();
            self.windows.push(r);
            if let (true, Some(j), Some(cg)) = (
                self.windows.closed() > closed,
                self.judge.as_mut(),
                run.cgroup.as_ref(),
            ) && j.window_closed(cg)
            {
                self.windows.discard_last();
            }
        }
    }

    /// That progress is sparser than a window, once.
    pub(super) fn sparse_news(&mut self, m: &MeasureSpec) -> Option<String> {
        let gap = (self.windows.report_interval_s())
            .filter(|g| !self.warned_sparse && *g > m.window_s)?;
        self.warned_sparse = true;
        Some(format!(
            "one progress line every {gap:.1} s, sparser than window_s = {} s: each window \
             widens to {MIN_INTERVALS_PER_WINDOW} report intervals (about {:.0} s)",
            m.window_s,
            gap * MIN_INTERVALS_PER_WINDOW as f64
        ))
    }

    /// That progress comes in bursts, once it is known.
    pub(super) fn rhythm_news(&mut self) -> Option<String> {
        let r = self.windows.rhythm().filter(|_| !self.told_rhythm)?;
        self.told_rhythm = true;
        Some(format!(
            "progress comes in bursts every {:.1} s: each window holds whole bursts",
            r.period_s
        ))
    }

    /// Samples resident memory, CPU speed and the memory counters' peaks.
    pub(super) fn sample(&mut self, run: &mut Run) {
        if let Some(bytes) = self.resident.sample(|| run.resident_bytes()) {
            self.rss_peak = self.rss_peak.max(bytes);
        }
        self.speed.sample();
        if let Some(c) = run.memory_counters() {
            self.anon_peak = self.anon_peak.max(c.anon_bytes);
            self.shmem_peak = self.shmem_peak.max(c.shmem_bytes);
            run.held_peak = run.held_peak.max(c.held_bytes());
            self.held_sum += u128::from(c.held_bytes());
            self.held_polls += 1;
        }
    }

    /// Whether it has what it needs: whole epochs where it measures over them, enough windows
    /// on a revisit (the spread between visits, not this visit's windows, makes the relative
    /// rate's interval), else steady windows.
    pub(super) fn done(&self, m: &MeasureSpec) -> bool {
        let w = &self.windows;
        match self.epoch {
            Some(n) => {
                let k = whole_epochs(n, w, self.elapsed_s(), m);
                w.gained() >= k * n && w.kept_windows() >= m.steady_windows
            }
            None if self.revisit => w.kept_windows() >= m.steady_windows,
            None => w.is_steady(m.steady_windows, m.steady_cv),
        }
    }

    /// How long it may go on: `max_s`, or for an epoch that outlasts it, the time it takes at
    /// the pace so far.
    pub(super) fn limit_s(&self, m: &MeasureSpec) -> f64 {
        match self.epoch {
            Some(n) if self.windows.gained() > 0.0 => {
                let elapsed = self.elapsed_s();
                let k = whole_epochs(n, &self.windows, elapsed, m);
                m.max_s.max(1.25 * k * n * elapsed / self.windows.gained())
            }
            _ => m.max_s,
        }
    }

    /// What the cgroup's counters (or, without one, the process tree) say of the `elapsed`
    /// seconds measured.
    pub(super) fn telemetry(
        &self,
        run: &mut Run,
        elapsed: f64,
        dataset_cached: Option<Cached>,
        mapped_hot_bytes: Option<u64>,
    ) -> Telemetry {
        let per_s = |a: u64, b: u64| b.saturating_sub(a) as f64 / elapsed;
        match (self.start_counters, run.counters()) {
            (Some(a), Some(b)) => Telemetry {
                cpu_cores_used: per_s(a.cpu_usage_ns, b.cpu_usage_ns) / 1e9,
                cpu_system_cores: a
                    .cpu_system_ns
                    .zip(b.cpu_system_ns)
                    .map(|(a, b)| per_s(a, b) / 1e9),
                throttled_s_per_s: per_s(a.throttled_ns, b.throttled_ns) / 1e9,
                rss_peak_bytes: self.rss_peak,
                page_cache_bytes: b.page_cache_bytes,
                storage_read_bytes_per_s: per_s(a.read_bytes, b.read_bytes),
                anon_peak_bytes: Some(self.anon_peak.max(b.anon_bytes)),
                shmem_peak_bytes: Some(self.shmem_peak.max(b.shmem_bytes)),
                held_mean_bytes: (self.held_polls > 0)
                    .then(|| (self.held_sum / u128::from(self.held_polls)) as u64),
                dataset_cached_bytes: dataset_cached.map(|c| c.bytes),
                dataset_cached_half_width_bytes: dataset_cached.and_then(|c| c.half_width_bytes),
                mapped_hot_bytes,
                reference_loop_ns: self.speed.median_ns(),
            },
            _ => {
                // No cgroup counts for the job: its process tree does, memory aside.
                let (u0, u1) = (self.start_usage, run.tree_usage());
                Telemetry {
                    cpu_cores_used: per_s(u0.cpu_ns, u1.cpu_ns) / 1e9,
                    storage_read_bytes_per_s: per_s(u0.read_bytes, u1.read_bytes),
                    rss_peak_bytes: self.rss_peak,
                    reference_loop_ns: self.speed.median_ns(),
                    ..Telemetry::default()
                }
            }
        }
    }

    /// The samples to take the rate over instead of the steady windows, where there is such a
    /// period: the whole epochs measured (where the dataset is partly cached), or, where the
    /// windows never settled on a job that went through whole epochs of a cached dataset (a
    /// loader that starts its workers afresh every epoch is slower at each epoch's start), the
    /// epochs it went through, then also how many (and the measurement counts as steady).
    pub(super) fn period(
        &mut self,
        epoch_samples: Option<f64>,
        elapsed: f64,
        m: &MeasureSpec,
    ) -> Option<(f64, Option<f64>)> {
        let gained = self.windows.gained();
        match (self.epoch, epoch_samples) {
            (Some(n), _) => {
                let period = n * whole_epochs(n, &self.windows, elapsed, m);
                Some((if gained >= period { period } else { n }, None))
            }
            (None, Some(n)) if !self.steady && n > 0.0 && gained >= n => {
                let epochs = (gained / n).floor();
                self.steady = true;
                Some((n * epochs, Some(epochs)))
            }
            _ => None,
        }
    }

    /// Why there is no rate: too few or too sparse progress lines, or none at all.
    pub(super) fn why_no_rate(&self, run: &Run, elapsed: f64, m: &MeasureSpec) -> String {
        match self.windows.report_interval_s() {
            Some(_) => (self.windows)
                .too_sparse(m.steady_windows, m.max_s, elapsed)
                .unwrap_or_else(|| "too few progress lines".into()),
            None => format!(
                "the job reported no progress for {elapsed:.0} s of measurement (max_s); \
                 expected {}",
                run.tail.expectation()
            ),
        }
    }

    /// Why the rate is not a steady one, where it is not.
    pub(super) fn unsteady_note(&self, elapsed: f64, m: &MeasureSpec) -> Option<String> {
        if self.steady {
            return None;
        }
        if let Some(n) = self.epoch {
            return Some(format!(
                "unsteady: the dataset is partly cached and the measurement covers {:.0}% of an \
                 epoch ({n:.0} samples); hits come early in an epoch, so this rate may be off: \
                 raise max_s",
                100.0 * self.windows.gained() / n
            ));
        }
        let why = (self.windows)
            .too_sparse(m.steady_windows, m.max_s, elapsed)
            .unwrap_or_else(|| {
                format!(
                    "the rates of the last {} windows still vary by more than steady_cv = {} \
                     after max_s = {} s",
                    m.steady_windows, m.steady_cv, m.max_s
                )
            });
        Some(format!("unsteady: {why}"))
    }
}
