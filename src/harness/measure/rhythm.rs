//! The rhythm of a job's progress: a job fed by many loader workers often gets its batches in
//! bursts (every worker delivers at about the same time, the training loop takes them one after
//! another, then waits for the next round). Its reports then come in clusters separated by long
//! pauses, and a rate window of a few seconds holds one burst or two: the window rates swing
//! by half or more although the rate over whole bursts is steady. Found here from the reports'
//! own timing, the rhythm lets the rate windows run from the start of one burst to the start of
//! a later one ([`RateWindows`](crate::harness::measure::steady::RateWindows)), so each holds whole bursts.

use crate::harness::measure::job_output::Report;

/// A gap this many times the median gap between reports is a pause between bursts.
pub const PAUSE_FACTOR: f64 = 4.0;
/// Pauses needed before a rhythm is believed: three bursts give two periods.
pub const MIN_PAUSES: usize = 3;
/// Share of the time the pauses must take: a job whose reports stop now and then (a garbage
/// collection, a checkpoint) has no rhythm worth cutting windows by.
pub const MIN_PAUSE_SHARE: f64 = 0.2;
/// Reports needed before a rhythm is looked for.
pub const MIN_REPORTS: usize = 12;

/// Bursts of progress separated by pauses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rhythm {
    /// A gap between reports longer than this is a pause; the report after it starts a burst.
    pub pause_s: f64,
    /// Mean seconds from the start of one burst to the start of the next.
    pub period_s: f64,
}

impl Rhythm {
    /// Whether the report at `i` starts a burst: the gap before it is a pause.
    pub fn starts_burst(&self, reports: &[Report], i: usize) -> bool {
        i > 0 && reports[i].t - reports[i - 1].t > self.pause_s
    }
}

/// The rhythm of `reports` (in time order), if they come in bursts: at least [`MIN_PAUSES`]
/// gaps longer than [`PAUSE_FACTOR`] times the median gap, taking at least
/// [`MIN_PAUSE_SHARE`] of the time.
pub fn detect(reports: &[Report]) -> Option<Rhythm> {
    if reports.len() < MIN_REPORTS {
        return None;
    }
    let gaps: Vec<f64> = reports.windows(2).map(|w| w[1].t - w[0].t).collect();
    let mut sorted = gaps.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    if !(median > 0.0 && median.is_finite()) {
        return None;
    }
    let pause_s = PAUSE_FACTOR * median;
    let starts: Vec<f64> = gaps
        .iter()
        .enumerate()
        .filter(|(_, g)| **g > pause_s)
        .map(|(i, _)| reports[i + 1].t)
        .collect();
    let paused: f64 = gaps.iter().filter(|g| **g > pause_s).sum();
    let span = reports[reports.len() - 1].t - reports[0].t;
    if starts.len() < MIN_PAUSES || paused < MIN_PAUSE_SHARE * span {
        return None;
    }
    let period_s = (starts[starts.len() - 1] - starts[0]) / (starts.len() - 1) as f64;
    (period_s > 0.0 && period_s.is_finite()).then_some(Rhythm { pause_s, period_s })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn report(t: f64, samples: f64) -> Report {
        Report {
            t,
            samples,
            iterations: None,
            iteration_time_s: None,
        }
    }

    /// `bursts` bursts of `k` reports of 8 samples, 40 ms apart, one burst every `period`
    /// seconds.
    pub(crate) fn bursty(bursts: usize, k: usize, period: f64) -> Vec<Report> {
        let mut out = Vec::new();
        for b in 0..bursts {
            for i in 0..k {
                let n = (b * k + i + 1) as f64;
                out.push(report(b as f64 * period + i as f64 * 0.04, n * 8.0));
            }
        }
        out
    }

    #[test]
    fn bursts_of_reports_give_their_period() {
        let r = detect(&bursty(5, 16, 2.5)).expect("a rhythm");
        assert!((r.period_s - 2.5).abs() < 1e-9, "{r:?}");
        assert!(r.pause_s < 1.8 && r.pause_s > 0.04, "{r:?}");
        let reports = bursty(5, 16, 2.5);
        assert!(r.starts_burst(&reports, 16));
        assert!(!r.starts_burst(&reports, 17));
    }

    #[test]
    fn even_reports_or_a_rare_stall_have_no_rhythm() {
        let even: Vec<Report> = (0..200).map(|i| report(i as f64 * 0.1, i as f64)).collect();
        assert_eq!(detect(&even), None);
        // Three stalls of 1 s in 20 s of even reports: 15% of the time, no rhythm.
        let mut t = 0.0;
        let mut stalled = Vec::new();
        for i in 0..170 {
            t += if i % 50 == 49 { 1.0 } else { 0.1 };
            stalled.push(report(t, i as f64));
        }
        assert_eq!(detect(&stalled), None);
        assert_eq!(
            detect(&bursty(2, 16, 2.5)),
            None,
            "two bursts are not yet a rhythm"
        );
    }
}
