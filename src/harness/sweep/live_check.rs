//! The live check: a live sweep re-caps one running job from level to level, which measures
//! what a fresh start at each level would only if the job does not size itself from the CPUs
//! it saw at start (PyTorch, OpenMP, MKL and oneDNN size their thread pools once; DataLoader
//! workers are started once). So the first point a launch reaches by re-capping its CPU is also
//! measured on a fresh launch, and the check decides between the two:
//!
//! - the tolerance is a fixed slack ([`LIVE_CHECK_SLACK`]) plus the measured spread: the two
//!   rates' intervals and, once there are two fresh launches or more, the spread between them;
//!   it is never wider than [`LIVE_CHECK_MAX_TOLERANCE`], so no difference above 15% is ever
//!   accepted, however noisy the measurements;
//! - within the tolerance: re-capping is valid, the sweep goes on live;
//! - beyond the widest tolerance by more than the measured spread, over two fresh launches or
//!   more, or over one by [`LIVE_CHECK_CLEAR_RATIO`] or more: the job sizes itself, every later
//!   point is measured on a fresh launch;
//! - in between, or within a tolerance the measured spread has pushed to its widest while the
//!   difference is beyond the slack, another fresh launch measures the spread between launches
//!   (up to [`LIVE_CHECK_MAX_FRESH`]); if the difference is still beyond the tolerance then, the
//!   sweep relaunches, the safe mode.
//!
//! The header records the rates, the tolerance, the decision and its reason.

use super::launches::{combine_cells, launch_sd};
use super::measure::Outcome;
use super::{Run, Sweep, SweepError};
use crate::harness::plan::{Point, label};
use crate::matrix::{BlockReference, Cell, LiveCheck, Throughput};
use crate::spec::SweepMode;
use std::time::Instant;

/// Relative difference two rates may show beyond their measured spread and still agree: what
/// re-capping itself may change (the CFS quota's period, a cold cache after the re-cap), not
/// the launch-to-launch spread, which is measured.
pub const LIVE_CHECK_SLACK: f64 = 0.05;
/// The widest tolerance: a re-capped rate more than this far from a fresh launch's is never
/// accepted. A job that sizes itself from the CPUs it saw at start is off by 2x to 40x
/// (docs/JOB_SPEC.md).
pub const LIVE_CHECK_MAX_TOLERANCE: f64 = 0.15;
/// Fresh launches the check may take before it decides for relaunching.
pub const LIVE_CHECK_MAX_FRESH: usize = 3;
/// A ratio between the re-capped and the fresh rate that one fresh launch decides: a job that
/// sizes itself is off by 2x to 40x, while a VM's host can slow one launch by a third against
/// the next, so a smaller difference beyond the tolerance is measured on another fresh launch
/// before the sweep relaunches.
pub const LIVE_CHECK_CLEAR_RATIO: f64 = 2.0;

/// Where a sweep stands with the live check.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum LiveCheckState {
    /// Nothing to check: the sweep relaunches, the spec says the job adapts, or no launch
    /// re-caps the CPU (the command depends on the CPU level).
    NotNeeded,
    /// The next point reached by re-capping the CPU is also measured on a fresh launch.
    Pending,
    /// That point was measured by re-capping; fresh launches are measuring it.
    Checking(Box<Checking>),
    Done(LiveCheck),
}

/// Relative half-width of a throughput's interval, against `reference`.
fn relative_half_width(t: &Throughput, reference: f64) -> f64 {
    (t.ci95_high - t.ci95_low) / 2.0 / reference
}

/// The check's verdict on the re-capped rate `live` against the fresh launches `fresh` (at
/// least one) at CPU level `cpu`. `None`: undecided, measure another fresh launch (only given
/// while fewer than [`LIVE_CHECK_MAX_FRESH`] were measured).
pub fn compare(cpu: f64, live: &Throughput, fresh: &[Throughput]) -> Option<LiveCheck> {
    let k = fresh.len().max(1);
    let mean = fresh.iter().map(|t| t.samples_per_s).sum::<f64>() / k as f64;
    let reference = mean.max(f64::MIN_POSITIVE);
    // Relative 95% spreads: the live rate's own interval, and the fresh mean's, from the
    // launches where there are several (a single launch varies by `sd`; the live launch is one
    // more launch, compared with the mean of `k`).
    let live_u = relative_half_width(live, reference);
    let sd = launch_sd(fresh)
        .map(|sd| sd / reference)
        .filter(|sd| sd.is_finite());
    let fresh_u = match sd {
        Some(sd) => 1.96 * sd * (1.0 / k as f64).sqrt(),
        None => fresh
            .first()
            .map_or(0.0, |f| relative_half_width(f, reference)),
    };
    let spread = match sd {
        // One launch against the mean of k: the between-launch spread counts once in full.
        Some(sd) => ((1.96 * sd).powi(2) + fresh_u.powi(2)).sqrt().max(live_u),
        None => (live_u.powi(2) + fresh_u.powi(2)).sqrt(),
    };
    let tolerance = (LIVE_CHECK_SLACK + spread).min(LIVE_CHECK_MAX_TOLERANCE);
    let gap = (live.samples_per_s - mean).abs() / reference;
    let check = |outcome: &str, reason: String| LiveCheck {
        cpu,
        live_samples_per_s: live.samples_per_s,
        relaunch_samples_per_s: mean,
        tolerance,
        outcome: outcome.into(),
        fresh_samples_per_s: if k > 1 {
            fresh.iter().map(|t| t.samples_per_s).collect()
        } else {
            Vec::new()
        },
        between_launch_spread: sd,
        reason,
        reference_ratio: None,
    };
    let launches = match k {
        1 => "one fresh launch".to_string(),
        k => format!(
            "{k} fresh launches (between-launch spread {:.1}%)",
            100.0 * sd.unwrap_or(0.0)
        ),
    };
    if !(mean > 0.0 && spread.is_finite()) {
        return Some(check(
            "relaunch",
            "the fresh launch made no progress to compare with".into(),
        ));
    }
    // Intervals so wide that the tolerance is cut to its widest decide little: a difference
    // beyond the slack is measured again on another fresh launch while launches are left.
    let too_wide = LIVE_CHECK_SLACK + spread > LIVE_CHECK_MAX_TOLERANCE;
    if gap <= tolerance && !(too_wide && gap > LIVE_CHECK_SLACK && k < LIVE_CHECK_MAX_FRESH) {
        return Some(check(
            "live",
            format!(
                "{:.1}% apart, within {:.1}% slack plus {:.1}% measured spread over {launches}",
                100.0 * gap,
                100.0 * LIVE_CHECK_SLACK,
                100.0 * spread
            ),
        ));
    }
    let ratio = live.samples_per_s.max(mean) / live.samples_per_s.min(mean);
    let clear = k > 1 || ratio >= LIVE_CHECK_CLEAR_RATIO;
    if gap > LIVE_CHECK_MAX_TOLERANCE + spread && clear {
        return Some(check(
            "relaunch",
            format!(
                "{:.1}% apart, beyond the widest tolerance ({:.0}%) plus the {:.1}% measured \
                 spread over {launches}",
                100.0 * gap,
                100.0 * LIVE_CHECK_MAX_TOLERANCE,
                100.0 * spread
            ),
        ));
    }
    if fresh.len() < LIVE_CHECK_MAX_FRESH {
        return None;
    }
    Some(check(
        "relaunch",
        format!(
            "{:.1}% apart after {launches}, beyond the {:.1}% tolerance; relaunching is the safe \
             mode when the two cannot be shown to agree",
            100.0 * gap,
            100.0 * tolerance
        ),
    ))
}

/// One line saying what the check found, for the screen and `show`.
pub fn describe(check: &LiveCheck) -> String {
    let compared = check.compared_samples_per_s();
    let gap = (check.live_samples_per_s / compared.max(f64::MIN_POSITIVE) - 1.0) * 100.0;
    let (fresh, reason) = (check.fresh_label(), check.reason_suffix());
    match check.outcome.as_str() {
        "live" => format!(
            "live check at {} CPUs: re-capped {:.1} vs {fresh} {:.1} samples/s ({gap:+.1}%, \
             within ±{:.1}%): re-capping the running job is valid{reason}",
            check.cpu,
            check.live_samples_per_s,
            compared,
            check.tolerance * 100.0
        ),
        _ => format!(
            "live check at {} CPUs: re-capped {:.1} vs {fresh} {:.1} samples/s ({gap:+.1}%, \
             beyond ±{:.1}%): the job sizes itself from the CPUs it sees at start (threads, \
             workers), so every point is measured on a fresh launch{reason}; set \
             sweep.adapts_to_caps = false to skip the check, or make the job follow $PROFILER_CPUS",
            check.cpu,
            check.live_samples_per_s,
            compared,
            check.tolerance * 100.0
        ),
    }
}

/// The live check in progress: the re-capped measurement of the check's point, the reference's
/// rate on its launch while it was measured, and the fresh launches so far, each with the
/// reference it was re-capped up to after the point.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Checking {
    point: Point,
    live: Cell,
    live_reference: Option<f64>,
    fresh: Vec<Cell>,
    fresh_references: Vec<Option<BlockReference>>,
}

/// `t` scaled by `factor`, its interval too.
fn scaled(t: &Throughput, factor: f64) -> Throughput {
    Throughput {
        samples_per_s: t.samples_per_s * factor,
        ci95_low: t.ci95_low * factor,
        ci95_high: t.ci95_high * factor,
        ..t.clone()
    }
}

/// The fresh launches' rates as the live launch would have measured them: each scaled by the
/// live launch's reference rate over its own, where every one of them was measured, with the
/// mean factor; else as they are.
fn paired_rates(c: &Checking) -> (Vec<Throughput>, Option<f64>) {
    let rates: Vec<Throughput> = c
        .fresh
        .iter()
        .filter_map(|f| f.throughput.clone())
        .collect();
    let factors: Option<Vec<f64>> = (c.fresh.iter().zip(&c.fresh_references))
        .filter(|(f, _)| f.throughput.is_some())
        .map(|(_, own)| {
            let own = own.as_ref().filter(|o| o.samples_per_s > 0.0)?;
            Some(c.live_reference? / own.samples_per_s)
        })
        .collect();
    match factors.filter(|f| !f.is_empty() && f.iter().all(|x| x.is_finite())) {
        Some(f) => {
            let scaled: Vec<Throughput> =
                rates.iter().zip(&f).map(|(t, x)| scaled(t, *x)).collect();
            let sum = |ts: &[Throughput]| ts.iter().map(|t| t.samples_per_s).sum::<f64>();
            let ratio = sum(&scaled) / sum(&rates).max(f64::MIN_POSITIVE);
            (scaled, Some(ratio))
        }
        None => (rates, None),
    }
}

impl Sweep<'_> {
    /// Whether `p`, just measured on a launch started at `launch_cpu`, is the point the live check
    /// is made at: the first the launch reached by re-capping its CPU.
    pub(super) fn live_check_due(&self, launch_cpu: f64, p: &Point) -> bool {
        self.live_check == LiveCheckState::Pending && p.cpu != launch_cpu
    }

    /// Holds `live`, measured at `p` by re-capping, until fresh launches have measured `p`; first
    /// re-caps the launch back to the reference to close its block, so that the re-capped rate
    /// is read against the reference as it was meanwhile.
    pub(super) fn hold_for_live_check(
        &mut self,
        run: &mut Run,
        p: &Point,
        live: Cell,
    ) -> Result<(), SweepError> {
        if self.closing_due(p, None) {
            self.measure_closing(run, p)?;
        }
        let mid = live.measured_unix_s.map(|[a, b]| 0.5 * (a + b));
        let live_reference = (self.block.as_ref().zip(mid)).and_then(|(b, t)| b.reference_at(t));
        self.live_check = LiveCheckState::Checking(Box::new(Checking {
            point: p.clone(),
            live,
            live_reference: live_reference.map(|(rate, _)| rate),
            fresh: Vec::new(),
            fresh_references: Vec::new(),
        }));
        Ok(())
    }

    /// The point the next launch measures fresh for the live check, while it is being made.
    pub(super) fn fresh_check_point(&self) -> Option<Point> {
        match &self.live_check {
            LiveCheckState::Checking(c) => Some(c.point.clone()),
            _ => None,
        }
    }

    /// The live check's fresh launch at `p`: measures it, re-caps up to the reference and
    /// measures that, and decides the check where it can. Where re-capping proved valid, the
    /// reference measured here opens the launch's block and the walk goes on from it (returned).
    pub(super) fn fresh_check(
        &mut self,
        run: &mut Run,
        p: &Point,
        started: Instant,
    ) -> Result<Option<Point>, SweepError> {
        let LiveCheckState::Checking(c) = &self.live_check else {
            return Ok(None);
        };
        let n = c.fresh.len();
        self.observer.status(&format!(
            "{}: live check: measuring the same point on a fresh launch{}",
            label(p),
            match n {
                0 => String::new(),
                n => format!(
                    " ({} of at most {LIVE_CHECK_MAX_FRESH}: the difference is within what \
                     launches may differ by)",
                    n + 1
                ),
            }
        ));
        let fresh = match self.measure(run, p, started)? {
            Outcome::Cell(c) | Outcome::Died(c) => c,
        };
        let reference = self.reference_point(&p.params);
        let mut fresh_reference = None;
        if fresh.throughput.is_some() && run.job.try_status().is_none() && *p != reference {
            self.observer.status(&format!(
                "{}: live check: re-capping the fresh launch up to the reference",
                label(&reference)
            ));
            if let Outcome::Cell(cell) = self.measure_reference(run, &reference)? {
                fresh_reference = Some(cell);
            }
        }
        let live = self.record_fresh_check(fresh, fresh_reference.as_ref())?;
        match (live, fresh_reference) {
            (true, Some(cell)) => {
                self.note_opening(&reference, &cell);
                self.record(cell)?;
                Ok(Some(reference))
            }
            _ => Ok(None),
        }
    }

    /// Adds a fresh launch's measurement of the check's point, with the reference it was
    /// re-capped up to, and decides the check where the launches so far can (`true`:
    /// re-capping is valid).
    pub(super) fn record_fresh_check(
        &mut self,
        fresh: Cell,
        reference: Option<&Cell>,
    ) -> Result<bool, SweepError> {
        let own = reference.and_then(super::blocks::reference_of);
        if let LiveCheckState::Checking(c) = &mut self.live_check {
            c.fresh.push(fresh);
            c.fresh_references.push(own);
        }
        self.conclude_live_check()
    }

    /// Decides the check where the launches so far can (`true`: re-capping is valid). Undecided,
    /// it stays in progress and the next launch is another fresh one.
    fn conclude_live_check(&mut self) -> Result<bool, SweepError> {
        let LiveCheckState::Checking(c) = self.live_check.clone() else {
            return Ok(false);
        };
        let (rates, reference_ratio) = paired_rates(&c);
        let p = &c.point;
        let check = match (&c.live.throughput, rates.is_empty()) {
            (Some(l), false) => match compare(p.cpu, l, &rates) {
                // The record keeps the fresh launches' own rates, and the factor.
                Some(check) => {
                    let own: Vec<f64> = c.fresh.iter().filter_map(Cell::samples_per_s).collect();
                    LiveCheck {
                        relaunch_samples_per_s: own.iter().sum::<f64>() / own.len() as f64,
                        fresh_samples_per_s: match own.len() {
                            1 => Vec::new(),
                            _ => own,
                        },
                        reference_ratio,
                        ..check
                    }
                }
                None => return Ok(false),
            },
            _ => LiveCheck {
                cpu: p.cpu,
                live_samples_per_s: c.live.samples_per_s().unwrap_or(0.0),
                relaunch_samples_per_s: rates.first().map_or(0.0, |t| t.samples_per_s),
                tolerance: LIVE_CHECK_SLACK,
                outcome: "relaunch".into(),
                fresh_samples_per_s: Vec::new(),
                between_launch_spread: None,
                reason: "no rate from one of the two launches".into(),
                reference_ratio: None,
            },
        };
        let line = describe(&check);
        let live = check.outcome == "live";
        if live {
            self.observer.note(&line);
        } else {
            self.observer.warn(&line);
            self.mode = SweepMode::Relaunch;
            // The fresh launch's block was re-capped up to its reference: not valid.
            self.block = None;
        }
        self.live_check = LiveCheckState::Done(check.clone());
        let kept = match live {
            true if self.opts.spec.spec.measure.launches == 1 => c.live,
            true => combine_cells(&[&[c.live][..], &c.fresh].concat()).expect("the live rate"),
            false => combine_cells(&c.fresh).unwrap_or(c.live),
        };
        self.record(kept)?;
        self.update_header(|h| h.live_check = Some(check))?;
        Ok(live)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(rate: f64, half: f64) -> Throughput {
        Throughput {
            samples_per_s: rate,
            ci95_low: rate - half,
            ci95_high: rate + half,
            windows: 5,
            measured_s: 10.0,
            launches: Vec::new(),
        }
    }

    /// Two fresh launches whose own references ran at 800 and 1200 where the live launch's ran
    /// at 1000: each fresh rate is read at the live launch's speed; without every reference,
    /// the rates are compared as they are.
    #[test]
    fn fresh_rates_are_scaled_to_the_live_launchs_reference() {
        let fresh = |rate: f64| {
            let mut c = crate::matrix::fixtures::cell(1.0);
            c.throughput = Some(tp(rate, 1.0));
            c
        };
        let reference = |rate: f64| BlockReference {
            samples_per_s: rate,
            ci95_low: rate,
            ci95_high: rate,
            measured_unix_s: [0.0, 1.0],
        };
        let mut c = Checking {
            point: Point {
                cpu: 1.0,
                mem: 0,
                params: Default::default(),
            },
            live: fresh(100.0),
            live_reference: Some(1000.0),
            fresh: vec![fresh(100.0), fresh(120.0)],
            fresh_references: vec![Some(reference(800.0)), Some(reference(1200.0))],
        };
        let (rates, ratio) = paired_rates(&c);
        let got: Vec<f64> = rates.iter().map(|t| t.samples_per_s).collect();
        assert_eq!(got, vec![125.0, 100.0]);
        assert_eq!(rates[0].ci95_low, 99.0 * 1.25);
        assert!((ratio.unwrap() - 225.0 / 220.0).abs() < 1e-12);
        c.fresh_references[1] = None;
        let (rates, ratio) = paired_rates(&c);
        assert_eq!((rates[1].samples_per_s, ratio), (120.0, None));
    }

    fn outcome(c: Option<LiveCheck>) -> &'static str {
        match c.map(|c| c.outcome) {
            Some(o) if o == "live" => "live",
            Some(_) => "relaunch",
            None => "undecided",
        }
    }

    /// The measured case: 4.6 samples/s re-capped against 66.2 relaunched is a switch at once;
    /// two measurements 3% apart with 1% intervals agree.
    #[test]
    fn far_apart_switches_at_once_and_close_agrees() {
        let c = compare(1.0, &tp(4.6, 0.3), &[tp(66.2, 1.0)]).unwrap();
        assert_eq!(c.outcome, "relaunch");
        assert!(describe(&c).contains("fresh launch"), "{}", describe(&c));
        assert_eq!(
            outcome(compare(1.0, &tp(103.0, 1.0), &[tp(100.0, 1.0)])),
            "live"
        );
    }

    /// Between the tolerance and clearly beyond it, one fresh launch cannot decide: another is
    /// measured, and after the last one a difference still beyond the tolerance relaunches.
    #[test]
    fn in_between_takes_more_fresh_launches_then_decides() {
        let one = [tp(100.0, 1.0)];
        assert_eq!(outcome(compare(1.0, &tp(110.0, 1.0), &one)), "undecided");
        // Launches at 100, 108 and 104: the spread between them covers the 6% difference
        // (two were too few to say so: their spread pushed the tolerance to its widest).
        let two = [tp(100.0, 1.0), tp(108.0, 1.0)];
        assert_eq!(outcome(compare(1.0, &tp(110.0, 1.0), &two)), "undecided");
        let three = [tp(100.0, 1.0), tp(108.0, 1.0), tp(104.0, 1.0)];
        let c = compare(1.0, &tp(110.0, 1.0), &three).unwrap();
        assert_eq!(c.outcome, "live", "{c:?}");
        assert_eq!(c.fresh_samples_per_s, vec![100.0, 108.0, 104.0]);
        assert!(c.between_launch_spread.unwrap() > 0.0);
        // Launches that agree closely leave 13% unexplained: relaunch after the last one.
        let three = [tp(100.0, 1.0), tp(100.5, 1.0), tp(99.5, 1.0)];
        let c = compare(1.0, &tp(113.0, 1.0), &three).unwrap();
        assert_eq!(c.outcome, "relaunch", "{c:?}");
        assert!(c.reason.contains("3 fresh launches"), "{}", c.reason);
    }

    /// Intervals wide enough to cut the tolerance to 15%: a 13% difference is measured again
    /// on more fresh launches before it is accepted; 4% is accepted at once.
    #[test]
    fn wide_intervals_take_more_fresh_launches_before_accepting() {
        let live = tp(113.0, 10.0);
        assert_eq!(
            outcome(compare(1.0, &live, &[tp(100.0, 10.0)])),
            "undecided"
        );
        assert_eq!(
            outcome(compare(1.0, &tp(104.0, 10.0), &[tp(100.0, 10.0)])),
            "live"
        );
        let three = [tp(100.0, 10.0), tp(95.0, 10.0), tp(105.0, 10.0)];
        let c = compare(1.0, &live, &three).unwrap();
        assert_eq!(c.outcome, "live", "{c:?}");
        assert_eq!(c.tolerance, LIVE_CHECK_MAX_TOLERANCE);
    }

    /// However wide the intervals, the check never accepts more than 15%.
    #[test]
    fn no_difference_above_fifteen_percent_is_accepted() {
        for k in 1..=LIVE_CHECK_MAX_FRESH {
            let fresh: Vec<Throughput> = (0..k)
                .map(|i| tp(100.0 + 30.0 * (i % 2) as f64, 40.0))
                .collect();
            let mean = fresh.iter().map(|t| t.samples_per_s).sum::<f64>() / k as f64;
            for live in [mean * 1.16, mean * 0.84, mean * 2.0] {
                if let Some(c) = compare(1.0, &tp(live, 50.0), &fresh) {
                    assert!(c.tolerance <= LIVE_CHECK_MAX_TOLERANCE + 1e-12, "{c:?}");
                    assert_eq!(c.outcome, "relaunch", "{c:?}");
                }
            }
        }
    }

    /// A re-capped rate 40% above one fresh launch is what a VM's host can do to two launches:
    /// another fresh launch is measured; one that lands near the re-capped rate agrees with it
    /// once a third shows the spread between launches.
    #[test]
    fn a_difference_a_slowed_host_can_make_is_measured_again() {
        let live = tp(305.0, 15.0);
        assert_eq!(
            outcome(compare(1.0, &live, &[tp(218.0, 10.0)])),
            "undecided"
        );
        let two = [tp(218.0, 10.0), tp(300.0, 12.0)];
        assert_eq!(outcome(compare(1.0, &live, &two)), "undecided");
        let three = [tp(218.0, 10.0), tp(300.0, 12.0), tp(296.0, 12.0)];
        assert_eq!(outcome(compare(1.0, &live, &three)), "live");
        // Two launches that agree with each other and not with the re-capped rate decide.
        let two = [tp(218.0, 10.0), tp(214.0, 10.0)];
        assert_eq!(outcome(compare(1.0, &live, &two)), "relaunch");
    }

    #[test]
    fn the_verdict_is_finite_for_a_stalled_relaunch() {
        let c = compare(0.5, &tp(10.0, 1.0), &[tp(0.0, 0.0)]).unwrap();
        assert!(c.tolerance.is_finite() && c.outcome == "relaunch");
    }
}
