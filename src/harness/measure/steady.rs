//! Steady-state detection and the throughput estimate of one cell, from the job's own progress
//! reports only.
//!
//! A rate is only ever the samples gained between two actual reports over the time between
//! them: time without a new report is not a sample, and nothing is interpolated. Reports are cut
//! into consecutive windows, each from one report to a later one, at least `window_s` long and
//! spanning at least [`MIN_INTERVALS_PER_WINDOW`] report intervals, so a job that reports
//! rarely gets wider windows rather than copies of one interval. The windows do not overlap, so
//! their rates are batch means of independent stretches of the run: the job is steady once the
//! coefficient of variation of the last N window rates is below the threshold, and the estimate
//! is the samples gained over those N windows per second, with a Student-t 95% interval from the
//! spread of their rates.
//!
//! A job whose reports come in bursts (many loader workers delivering together) has windows cut
//! by its rhythm instead ([`crate::harness::measure::rhythm`]): each window runs from the start of a burst to the
//! start of a later one, at least `window_s` apart, so it holds whole bursts and its rate is not
//! the luck of where a burst fell.

use crate::harness::measure::job_output::Report;
use crate::harness::measure::rhythm::{MIN_REPORTS, Rhythm, detect};
use crate::matrix::{Percentiles, Throughput};
use crate::stats::{coefficient_of_variation, mean_ci95, nearest_rank_percentile};

/// Report intervals a window spans at least: a window holds real progress, not one line.
pub const MIN_INTERVALS_PER_WINDOW: usize = 3;

/// Most windows one cell is cut into: a bound on the work and memory of `rates`, whatever the
/// timestamps (the progress reader also rejects timestamps far from now).
pub const MAX_WINDOWS: usize = 100_000;

/// Reports collected since the measurement of a cell started.
#[derive(Debug, Clone, Default)]
pub struct RateWindows {
    start_t: f64,
    window_s: f64,
    /// Reports that brought new progress, at or after `start_t`, in time order.
    reports: Vec<Report>,
    /// Closed windows as (first, last) indices into `reports`, and whether each is kept
    /// (a window disturbed by other load on the machine is discarded).
    windows: Vec<(usize, usize, bool)>,
    /// Unix-second spans of the windows discarded: windows cut again by a rhythm found later
    /// stay discarded where they overlap one.
    discarded: Vec<(f64, f64)>,
    /// The bursts the reports come in, once found.
    rhythm: Option<Rhythm>,
    /// Report count at which to look for a rhythm next.
    next_rhythm_check: usize,
}

impl RateWindows {
    /// Starts measuring at `start_t` (Unix seconds): reports from before are not part of it.
    pub fn new(start_t: f64, window_s: f64) -> Self {
        RateWindows {
            start_t,
            window_s,
            reports: Vec::new(),
            windows: Vec::new(),
            discarded: Vec::new(),
            rhythm: None,
            next_rhythm_check: MIN_REPORTS,
        }
    }

    /// The bursts the job's reports come in, when found: windows then hold whole bursts.
    pub fn rhythm(&self) -> Option<Rhythm> {
        self.rhythm
    }

    /// Adds a report. One from before the start, not finite, going back in time or in samples,
    /// or without new samples is no new progress and is ignored. One at the same time as the
    /// last report but further on replaces it: lines read together are timed by the read, and
    /// the last of them is the progress made by then (kept the first, a window's edge lags by up
    /// to a poll's progress, a bias where the job's bursts and the polls keep step).
    pub fn push(&mut self, r: Report) {
        if !(r.t.is_finite() && r.samples.is_finite()) || r.t < self.start_t {
            return;
        }
        if let Some(last) = self.reports.last_mut() {
            if r.t == last.t && r.samples > last.samples {
                // Windows ending or starting here refer to it by index: they take the new count.
                *last = r;
                return;
            }
            if r.t <= last.t || r.samples <= last.samples {
                return;
            }
        }
        self.reports.push(r);
        if self.reports.len() >= self.next_rhythm_check {
            // Looked for again as reports grow by a quarter: amortised, and the period
            // estimate follows the job.
            self.next_rhythm_check = self.reports.len() + (self.reports.len() / 4).max(8);
            self.follow_rhythm(detect(&self.reports));
        }
        self.close_at(self.reports.len() - 1);
    }

    /// Closes a window at report `last` if one ends there: at least
    /// [`MIN_INTERVALS_PER_WINDOW`] report intervals and `window_s` after the last window's
    /// end, and with a rhythm, at the start of a burst (the first window starting at the first
    /// burst's start).
    fn close_at(&mut self, last: usize) {
        let from = match (self.windows.last(), self.rhythm) {
            (Some(w), _) => w.1,
            (None, None) => 0,
            (None, Some(r)) => match (0..last).find(|&i| r.starts_burst(&self.reports, i)) {
                Some(first) => first,
                None => return,
            },
        };
        let at_burst_start = self
            .rhythm
            .is_none_or(|r| r.starts_burst(&self.reports, last));
        if self.windows.len() < MAX_WINDOWS
            && last >= from + MIN_INTERVALS_PER_WINDOW
            && self.reports[last].t - self.reports[from].t >= self.window_s
            && at_burst_start
        {
            let (a, b) = (self.reports[from].t, self.reports[last].t);
            let kept = !self.discarded.iter().any(|&(x, y)| a < y && b > x);
            self.windows.push((from, last, kept));
        }
    }

    /// Takes `found` as the job's rhythm where it is new or its period moved by more than a
    /// quarter, and cuts the windows again by it.
    fn follow_rhythm(&mut self, found: Option<Rhythm>) {
        let changed = match (self.rhythm, found) {
            (None, Some(_)) => true,
            (Some(old), Some(new)) => (new.period_s / old.period_s - 1.0).abs() > 0.25,
            _ => false,
        };
        if !changed {
            return;
        }
        self.rhythm = found;
        self.windows.clear();
        for last in 0..self.reports.len() {
            self.close_at(last);
        }
    }

    /// Windows closed so far, discarded ones included: it grows by one when a report closes a
    /// window.
    pub fn closed(&self) -> usize {
        self.windows.len()
    }

    /// The closed windows the estimate keeps: those not discarded as disturbed.
    pub fn kept_windows(&self) -> usize {
        self.kept().count()
    }

    /// Leaves the last closed window out of the estimate and of the steady-state test (it was
    /// disturbed); the next window starts where it ended.
    pub fn discard_last(&mut self) {
        if let Some(w) = self.windows.last_mut() {
            w.2 = false;
            self.discarded
                .push((self.reports[w.0].t, self.reports[w.1].t));
        }
    }

    fn kept(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.windows.iter().filter(|w| w.2).map(|w| (w.0, w.1))
    }

    fn gain(&self, (from, to): (usize, usize)) -> (f64, f64) {
        let (a, b) = (self.reports[from], self.reports[to]);
        (b.samples - a.samples, b.t - a.t)
    }

    fn rate(&self, w: (usize, usize)) -> f64 {
        let (samples, seconds) = self.gain(w);
        samples / seconds
    }

    /// Rates of the complete, kept windows so far.
    pub fn rates(&self) -> Vec<f64> {
        self.kept().map(|w| self.rate(w)).collect()
    }

    /// Whether the last `n` windows vary less than `max_cv`.
    pub fn is_steady(&self, n: usize, max_cv: f64) -> bool {
        let rates = self.rates();
        rates.len() >= n.max(2)
            && coefficient_of_variation(&rates[rates.len() - n.max(2)..]) < max_cv
    }

    /// The windows the estimate uses: the last `n` kept (all of them if fewer).
    fn used(&self, n: usize) -> Vec<(usize, usize)> {
        let kept: Vec<_> = self.kept().collect();
        kept[kept.len().saturating_sub(n.max(1))..].to_vec()
    }

    /// Throughput over the last `n` windows (all of them if fewer), or `None` without one
    /// complete window. With a single window the interval comes from the report intervals
    /// inside it, so it is never narrower than the data allow.
    pub fn throughput(&self, n: usize) -> Option<Throughput> {
        let used = self.used(n);
        let (first, last) = (used.first()?.0, used.last()?.1);
        let gain = used
            .iter()
            .map(|&w| self.gain(w))
            .fold((0.0, 0.0), |(s, t), (ds, dt)| (s + ds, t + dt));
        Some(self.estimate(gain, &used, (first, last)))
    }

    /// The rate of `(samples, seconds)` with a Student-t 95% interval from the rates of
    /// `windows` (batch means), or with fewer than two, of the report intervals from `first` to
    /// `last`, so it is never narrower than the data allow.
    fn estimate(
        &self,
        (samples, seconds): (f64, f64),
        windows: &[(usize, usize)],
        (first, last): (usize, usize),
    ) -> Throughput {
        let mean = samples / seconds;
        let batch_rates: Vec<f64> = if windows.len() >= 2 {
            windows.iter().map(|&w| self.rate(w)).collect()
        } else {
            (first..last).map(|i| self.rate((i, i + 1))).collect()
        };
        let (_, half) = mean_ci95(&batch_rates);
        Throughput {
            samples_per_s: mean,
            ci95_low: (mean - half).max(0.0),
            ci95_high: mean + half,
            windows: windows.len().max(1) as u32,
            measured_s: seconds,
            launches: Vec::new(),
        }
    }

    /// Samples gained since the first report of the measurement.
    pub fn gained(&self) -> f64 {
        match (self.reports.first(), self.reports.last()) {
            (Some(a), Some(b)) => b.samples - a.samples,
            _ => 0.0,
        }
    }

    /// The shortest stretch of reports ending at the last one that gains at least `period`
    /// samples, as (first, last) indices into `reports`.
    fn period_span(&self, period: f64) -> Option<(usize, usize)> {
        let last = self.reports.len().checked_sub(1)?;
        let target = self.reports[last].samples - period.max(0.0);
        let first = self.reports.iter().rposition(|r| r.samples <= target)?;
        (first < last).then_some((first, last))
    }

    /// Throughput over one whole period of `period` samples (an epoch: whatever varies within
    /// an epoch, such as the hits of a partly cached dataset, averages out over one), or `None`
    /// before a period has been gained. The interval comes from the rates of the windows (or,
    /// with fewer than two, the report intervals) inside the stretch: it includes the variation
    /// within the epoch, so it is wider than the uncertainty of the epoch's mean.
    pub fn throughput_over(&self, period: f64) -> Option<Throughput> {
        let span = self.period_span(period)?;
        let inside: Vec<(usize, usize)> = self
            .kept()
            .filter(|&(a, b)| a >= span.0 && b <= span.1)
            .collect();
        Some(self.estimate(self.gain(span), &inside, span))
    }

    /// Unix seconds of the first and last report of [`Self::throughput_over`]'s stretch.
    pub fn period_times(&self, period: f64) -> Option<[f64; 2]> {
        let (first, last) = self.period_span(period)?;
        Some([self.reports[first].t, self.reports[last].t])
    }

    /// The kept windows lying inside `span` (Unix seconds): each one's span and rate.
    pub fn kept_within(&self, span: [f64; 2]) -> Vec<([f64; 2], f64)> {
        self.kept()
            .map(|w| ([self.reports[w.0].t, self.reports[w.1].t], self.rate(w)))
            .filter(|([a, b], _)| span[0] <= *a && *b <= span[1])
            .collect()
    }

    /// Unix seconds of the first and last report the estimate over the last `n` windows uses.
    pub fn span(&self, n: usize) -> Option<[f64; 2]> {
        let used = self.used(n);
        Some([
            self.reports[used.first()?.0].t,
            self.reports[used.last()?.1].t,
        ])
    }

    /// Unix-second spans inside [`Self::span`] that the estimate over the last `n` windows
    /// leaves out: the gaps between the windows it uses, where discarded (disturbed) windows
    /// lay. Its rate is the samples over the span less those in these gaps, over the span's
    /// seconds less theirs.
    pub fn left_out(&self, n: usize) -> Vec<[f64; 2]> {
        self.used(n)
            .windows(2)
            .map(|w| [self.reports[w[0].1].t, self.reports[w[1].0].t])
            .filter(|[a, b]| b > a)
            .collect()
    }

    /// Median seconds between consecutive progress reports so far.
    pub fn report_interval_s(&self) -> Option<f64> {
        let mut gaps: Vec<f64> = self.reports.windows(2).map(|w| w[1].t - w[0].t).collect();
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_by(f64::total_cmp);
        Some(nearest_rank_percentile(&gaps, 0.5))
    }

    /// Why `n` windows cannot be had within `max_s` at the job's pace of reports, if they
    /// cannot; `elapsed_s` is how long the measurement has run.
    pub fn too_sparse(&self, n: usize, max_s: f64, elapsed_s: f64) -> Option<String> {
        let n = n.max(2);
        let Some(gap) = self.report_interval_s() else {
            return Some(format!(
                "fewer than two progress lines in {elapsed_s:.0} s of measurement; raise max_s or print more often"
            ));
        };
        let window = self.window_s.max(gap * MIN_INTERVALS_PER_WINDOW as f64);
        if let Some(r) = self.rhythm.filter(|r| r.period_s > window) {
            let needed = r.period_s * n as f64;
            return (needed > max_s).then(|| {
                format!(
                    "progress comes in bursts every {:.1} s: {n} windows of whole bursts need \
                     about {needed:.0} s, more than max_s = {max_s} s; raise max_s",
                    r.period_s
                )
            });
        }
        let needed = window * n as f64;
        (needed > max_s).then(|| {
            format!(
                "one progress line every {gap:.1} s: {n} windows of at least {MIN_INTERVALS_PER_WINDOW} \
                 report intervals need about {needed:.0} s, more than max_s = {max_s} s; raise \
                 max_s or print more often"
            )
        })
    }

    /// p50/p95 seconds per iteration: the times the job prints, or else the times between
    /// consecutive reports that carry iteration counts.
    pub fn iteration_times(&self) -> Option<Percentiles> {
        let printed: Vec<f64> = self
            .reports
            .iter()
            .filter_map(|r| r.iteration_time_s)
            .collect();
        let mut times: Vec<f64> = if printed.len() >= 2 {
            printed
        } else {
            self.reports
                .windows(2)
                .filter_map(|w| {
                    let di = w[1].iterations? - w[0].iterations?;
                    (di > 0.0).then(|| (w[1].t - w[0].t) / di)
                })
                .collect()
        };
        times.retain(|t| t.is_finite());
        if times.len() < 2 {
            return None;
        }
        times.sort_by(f64::total_cmp);
        Some(Percentiles {
            p50: nearest_rank_percentile(&times, 0.50),
            p95: nearest_rank_percentile(&times, 0.95),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(t: f64, samples: f64, it: f64) -> Report {
        Report {
            t,
            samples,
            iterations: Some(it),
            iteration_time_s: None,
        }
    }

    /// A job whose epochs of `n` samples run at `fast` samples/s for their first `part` and at
    /// `slow` for the rest (a partly cached dataset: the hits come early in each epoch), reported
    /// every `dt` seconds from `t0`, sampled at `count` reports, starting `offset` samples into
    /// an epoch.
    fn cycling(n: f64, part: f64, fast: f64, slow: f64, offset: f64, count: usize) -> Vec<Report> {
        let dt = 0.05;
        let mut samples = offset;
        (0..count)
            .map(|i| {
                let r = report(100.0 + i as f64 * dt, samples, i as f64);
                let rate = if samples % n < part * n { fast } else { slow };
                samples += rate * dt;
                r
            })
            .collect()
    }

    #[test]
    fn a_whole_epoch_averages_what_varies_within_it() {
        let (n, part, fast, slow) = (1000.0, 0.4, 400.0, 100.0);
        // One epoch takes 400/400 + 600/100 = 7 s: 1000/7 samples/s on average.
        let epoch_mean = n / (part * n / fast + (1.0 - part) * n / slow);
        for offset in [0.0, 250.0, 399.0, 400.0, 700.0, 999.0] {
            let mut w = RateWindows::new(100.0, 0.5);
            for r in cycling(n, part, fast, slow, offset, 300) {
                w.push(r);
            }
            assert!(w.gained() >= n);
            let whole = w.throughput_over(n).unwrap();
            assert!(
                (whole.samples_per_s - epoch_mean).abs() / epoch_mean < 0.02,
                "offset {offset}: {} vs {epoch_mean}",
                whole.samples_per_s
            );
            let [a, b] = w.period_times(n).unwrap();
            assert!((b - a - whole.measured_s).abs() < 1e-9 && whole.measured_s >= 6.9);
        }
        // Steady windows in the slow phase alone say 100, far from the epoch's 143.
        let mut w = RateWindows::new(100.0, 0.5);
        for r in cycling(n, part, fast, slow, 400.0, 100) {
            w.push(r);
        }
        assert!(w.is_steady(5, 0.05));
        assert!((w.throughput(5).unwrap().samples_per_s - slow).abs() < 1.0);
        assert!(w.throughput_over(n).is_none(), "less than an epoch gained");
    }

    #[test]
    fn constant_rate_is_steady_and_exact() {
        let mut w = RateWindows::new(100.0, 1.0);
        for i in 0..=100 {
            let t = 100.0 + i as f64 * 0.1;
            w.push(report(t, (t - 100.0) * 50.0, i as f64));
        }
        let rates = w.rates();
        assert_eq!(rates.len(), 10);
        assert!(rates.iter().all(|r| (r - 50.0).abs() < 1e-6));
        assert!(w.is_steady(5, 0.01));
        let tp = w.throughput(5).unwrap();
        assert!((tp.samples_per_s - 50.0).abs() < 1e-6 && tp.ci95_high - tp.ci95_low < 1e-6);
        let it = w.iteration_times().unwrap();
        assert!((it.p50 - 0.1).abs() < 1e-9);
    }

    #[test]
    fn ramping_rate_is_not_steady() {
        let mut w = RateWindows::new(0.0, 1.0);
        let mut s = 0.0;
        for i in 0..100 {
            s += i as f64; // rate grows every step
            w.push(report(i as f64 * 0.1, s, i as f64));
        }
        assert!(!w.is_steady(5, 0.05));
    }

    #[test]
    fn far_future_and_non_finite_reports_stay_bounded() {
        let mut w = RateWindows::new(0.0, 0.001);
        w.push(report(0.0, 0.0, 0.0));
        w.push(report(1e18, 1e9, 1.0));
        w.push(report(2e18, f64::NAN, 2.0));
        w.push(report(f64::INFINITY, 2e9, 3.0));
        assert!(w.rates().iter().all(|r| r.is_finite()));
        assert!(w.throughput(5).is_none(), "two reports make no window");
    }

    /// A job that prints every 16 s: every 2-s window between two lines used to get the same
    /// interpolated rate (CV 0, a 0.0% interval). Windows now widen to three report intervals,
    /// and four of them do not fit in 30 s: the cell cannot be steady, and says why.
    #[test]
    fn sparse_reports_widen_windows_and_are_never_steady_from_copies() {
        let mut w = RateWindows::new(0.0, 2.0);
        let mut samples = 0.0;
        for i in 0..=6 {
            w.push(report(i as f64 * 16.0, samples, i as f64 * 10.0));
            samples += 160.0;
        }
        assert_eq!(
            w.rates().len(),
            2,
            "six 16-s intervals make two 48-s windows"
        );
        assert!(!w.is_steady(4, 0.1));
        let why = w
            .too_sparse(4, 30.0, 96.0)
            .expect("too sparse for 4 windows in 30 s");
        assert!(why.contains("one progress line every 16.0 s"), "{why}");
        assert!(w.too_sparse(4, 1000.0, 96.0).is_none());
        // A single report after the start cannot be a rate.
        let mut one = RateWindows::new(0.0, 2.0);
        one.push(report(5.0, 10.0, 1.0));
        assert!(one.throughput(4).is_none());
        assert!(
            one.too_sparse(4, 30.0, 30.0)
                .unwrap()
                .contains("fewer than two")
        );
    }

    /// Time without a new report is not a sample: a 30-s stall (a validation pass) lands in
    /// one window, which then stands out instead of being smeared over many equal copies.
    #[test]
    fn a_stall_is_one_window_not_many_copies() {
        let mut w = RateWindows::new(0.0, 1.0);
        let mut t = 0.0;
        let mut s = 0.0;
        for i in 0..200 {
            if i == 100 {
                t += 30.0;
            }
            t += 0.1;
            s += 10.0;
            w.push(report(t, s, i as f64));
        }
        let rates = w.rates();
        let slow = rates.iter().filter(|r| **r < 50.0).count();
        assert_eq!(slow, 1, "{rates:?}");
        assert!(!w.is_steady(rates.len(), 0.1));
    }

    /// A discarded window is out of the estimate: the rate is that of the kept windows only.
    #[test]
    fn a_discarded_window_does_not_count() {
        let mut w = RateWindows::new(0.0, 0.95);
        let mut s = 0.0;
        for i in 1..=31 {
            s += if (12..=21).contains(&i) { 1.0 } else { 10.0 };
            w.push(report(i as f64 * 0.1, s, i as f64));
            if w.closed() == 2 && w.rates().len() == 2 {
                w.discard_last();
            }
        }
        assert_eq!(w.closed(), 3);
        assert_eq!(
            w.kept_windows(),
            2,
            "a discarded window is not one a visit may stop on"
        );
        let tp = w.throughput(5).unwrap();
        assert_eq!(tp.windows, 2);
        assert!((tp.samples_per_s - 100.0).abs() < 1e-6, "{tp:?}");
    }

    #[test]
    fn reports_from_before_the_start_and_without_progress_are_ignored() {
        let mut w = RateWindows::new(10.0, 0.5);
        w.push(report(9.0, 0.0, 0.0));
        for i in 0..=8 {
            let t = 10.0 + i as f64 * 0.25;
            w.push(report(t, 100.0 + i as f64 * 25.0, i as f64));
            w.push(report(t + 0.1, 100.0 + i as f64 * 25.0, i as f64)); // redrawn, no progress
        }
        let tp = w.throughput(10).unwrap();
        assert!((tp.samples_per_s - 100.0).abs() < 1e-9, "{tp:?}");
        // Two windows of three intervals each; the last two intervals make no window yet.
        assert_eq!(w.span(10), Some([10.0, 11.5]));
    }

    /// Lines read in one poll share its time: the last of them is what the job had done by
    /// then. A job at a steady 400 samples/s prints a line every 10 ms; the harness reads them
    /// 0.1 to 0.4 s apart. Kept the first line of each read, a window's count lags by the time
    /// since the read before, which differs at its two edges: the rate was off by up to 10%.
    #[test]
    fn lines_read_together_count_as_the_last_of_them() {
        let mut w = RateWindows::new(0.0, 1.0);
        let gaps = [0.1, 0.4, 0.25, 0.15, 0.35, 0.2];
        let (mut t, mut line) = (0.0, 0u32);
        for poll in 0..60 {
            t += gaps[poll % gaps.len()];
            // The lines printed since the last read, each 4 samples on.
            while f64::from(line + 1) * 0.01 <= t {
                line += 1;
                w.push(report(t, f64::from(line) * 4.0, f64::from(line)));
            }
        }
        for n in 1..=5 {
            let tp = w.throughput(n).unwrap();
            assert!(
                (tp.samples_per_s / 400.0 - 1.0).abs() < 0.005,
                "{n} windows: {tp:?} over {:?}",
                w.span(n)
            );
        }
    }

    /// Bursts of 16 reports 40 ms apart every 1.3 s (a job fed by 16 loader workers), 1.5-s
    /// windows: cut by time alone, a window ends inside a burst and holds a burst and a third or
    /// a burst and three quarters, so the window rates are 112 and 68 samples/s (CV 0.18). Cut by
    /// the rhythm, every window runs from a burst's start to a later one's: every rate is the
    /// true 98.5 samples/s and the cell is steady with a tight interval.
    #[test]
    fn bursty_reports_are_cut_into_whole_bursts() {
        let mut w = RateWindows::new(0.0, 1.5);
        for r in crate::harness::measure::rhythm::tests::bursty(20, 16, 1.3) {
            w.push(r);
        }
        let rhythm = w.rhythm().expect("the bursts are found");
        assert!((rhythm.period_s - 1.3).abs() < 1e-9, "{rhythm:?}");
        let rates = w.rates();
        assert_eq!(
            rates.len(),
            9,
            "two periods a window after the first burst: {rates:?}"
        );
        let truth = 16.0 * 8.0 / 1.3;
        assert!(rates.iter().all(|r| (r - truth).abs() < 1e-6), "{rates:?}");
        assert!(w.is_steady(5, 0.01));
        let tp = w.throughput(5).unwrap();
        assert!((tp.samples_per_s - truth).abs() < 1e-6, "{tp:?}");
        assert!(tp.ci95_high - tp.ci95_low < 1e-6, "{tp:?}");
    }

    /// A window discarded (disturbed) before the rhythm was found: the windows cut again by the
    /// rhythm that overlap it stay out of the estimate.
    #[test]
    fn windows_cut_again_stay_discarded_where_disturbed() {
        let mut w = RateWindows::new(0.0, 1.5);
        let mut discarded = None;
        for r in crate::harness::measure::rhythm::tests::bursty(20, 16, 1.3) {
            w.push(r);
            if w.closed() == 2 && discarded.is_none() {
                w.discard_last();
                discarded = Some(w.closed());
            }
        }
        assert!(discarded.is_some() && w.rhythm().is_some());
        assert_eq!(
            w.rates().len(),
            w.closed() - 1,
            "one window overlaps the disturbed span"
        );
    }

    proptest::proptest! {
        /// Whatever the reports: windows are disjoint and made of reports, every rate is finite
        /// and the estimate lies inside its interval and among the windows' rates.
        #[test]
        fn estimates_are_finite_and_inside_their_interval(
            gaps in proptest::collection::vec((0.0f64..5.0, 0.0f64..100.0), 0..200),
            window_s in 0.01f64..10.0,
            n in 1usize..8,
        ) {
            let mut w = RateWindows::new(0.0, window_s);
            let (mut t, mut s) = (0.0, 0.0);
            for (dt, ds) in gaps {
                t += dt;
                s += ds;
                w.push(report(t, s, 0.0));
            }
            let rates = w.rates();
            proptest::prop_assert!(rates.iter().all(|r| r.is_finite() && *r >= 0.0));
            for pair in w.windows.windows(2) {
                proptest::prop_assert_eq!(pair[0].1, pair[1].0);
            }
            if w.closed() > 1 {
                w.discard_last();
                proptest::prop_assert_eq!(w.rates().len(), rates.len() - 1);
            }
            let rates = w.rates();
            if let Some(tp) = w.throughput(n) {
                proptest::prop_assert!(tp.samples_per_s.is_finite());
                proptest::prop_assert!(tp.ci95_low <= tp.samples_per_s + 1e-9);
                proptest::prop_assert!(tp.samples_per_s <= tp.ci95_high + 1e-9);
                proptest::prop_assert!(tp.measured_s >= window_s.min(tp.measured_s));
                let used = &rates[rates.len() - tp.windows as usize..];
                let lo = used.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = used.iter().copied().fold(0.0, f64::max);
                proptest::prop_assert!(tp.samples_per_s >= lo - 1e-6 && tp.samples_per_s <= hi + 1e-6);
            } else {
                proptest::prop_assert!(rates.is_empty());
            }
        }
    }

    proptest::proptest! {
        /// Whatever is discarded, the estimate's rate is the progress over its span less the
        /// spans it leaves out, over the span's seconds less theirs: someone holding the job's
        /// own record can check a cell that discarded windows.
        #[test]
        fn the_rate_is_its_span_less_what_it_leaves_out(
            steps in proptest::collection::vec((0.01f64..2.0, 0.0f64..50.0, proptest::bool::ANY), 1..300),
            window_s in 0.05f64..5.0,
            n in 1usize..8,
        ) {
            let mut w = RateWindows::new(0.0, window_s);
            let mut record = vec![(0.0, 0.0)];
            let (mut t, mut s) = (0.0, 0.0);
            w.push(report(t, s, 0.0));
            for (dt, ds, disturbed) in steps {
                t += dt;
                s += ds;
                let closed = w.closed();
                w.push(report(t, s, 0.0));
                record.push((t, s));
                if disturbed && w.closed() > closed {
                    w.discard_last();
                }
            }
            let done_by = |at: f64| record.iter().rfind(|r| r.0 <= at).map_or(0.0, |r| r.1);
            let (Some(tp), Some([t0, t1])) = (w.throughput(n), w.span(n)) else {
                return Ok(());
            };
            let gaps = w.left_out(n);
            let mut samples = done_by(t1) - done_by(t0);
            let mut seconds = t1 - t0;
            for [a, b] in gaps {
                proptest::prop_assert!(t0 <= a && a < b && b <= t1);
                samples -= done_by(b) - done_by(a);
                seconds -= b - a;
            }
            proptest::prop_assert!((tp.measured_s - seconds).abs() < 1e-6 * t1.max(1.0));
            proptest::prop_assert!(
                (tp.samples_per_s - samples / seconds).abs() <= 1e-6 * tp.samples_per_s.max(1.0)
            );
        }
    }

    #[test]
    fn printed_iteration_times_are_used() {
        let mut w = RateWindows::new(0.0, 1.0);
        for (i, s) in [0.2, 0.3, 0.25].into_iter().enumerate() {
            w.push(Report {
                t: i as f64,
                samples: i as f64 * 10.0,
                iterations: None,
                iteration_time_s: Some(s),
            });
        }
        let p = w.iteration_times().unwrap();
        assert_eq!((p.p50, p.p95), (0.25, 0.3));
    }

    /// The interval is worth its name: over many samples of a known distribution it covers
    /// the true mean 95% of the time, for the small sample counts a sweep uses (a normal
    /// quantile in place of Student's would cover about 88% at 5 windows).
    #[test]
    fn the_interval_covers_the_true_mean_95_percent_of_the_time() {
        let mut state = 7u64;
        let mut uniform = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (((z ^ (z >> 31)) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (true_mean, sd) = (500.0, 40.0);
        for n in [3, 5, 8, 15] {
            let trials = 4000;
            let covered = (0..trials)
                .filter(|_| {
                    let xs: Vec<f64> = (0..n)
                        .map(|_| {
                            // Box-Muller.
                            let (u, v) = (uniform(), uniform());
                            true_mean
                                + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
                        })
                        .collect();
                    let (mean, half) = mean_ci95(&xs);
                    (mean - true_mean).abs() <= half
                })
                .count();
            let coverage = covered as f64 / trials as f64;
            assert!(
                (0.935..=0.965).contains(&coverage),
                "{n} windows: coverage {coverage}"
            );
        }
    }
}
