//! The live check: a live sweep re-caps one running job from level to level, which measures
//! what a fresh start at each level would only if the job does not size itself from the CPUs
//! it saw at start (PyTorch, OpenMP, MKL and oneDNN size their thread pools once; DataLoader
//! workers are started once). So the first point a launch reaches by re-capping its CPU is also
//! measured on a fresh launch; where the two rates differ by more than their intervals plus 10%,
//! the rest of the sweep relaunches the job at every point, and the header records the check.

use super::measure::Outcome;
use super::{Sweep, SweepError};
use crate::harness::plan::{Point, label};
use crate::matrix::{Cell, LiveCheck, Throughput};
use crate::spec::SweepMode;
use std::time::Instant;

/// Relative difference two rates may show beyond their intervals and still agree. Two fresh
/// launches of one job on a shared machine differ by up to about 10% (where the job lands and
/// what else runs there change between launches, not within one), while a job that sizes itself
/// from the CPUs it saw at start is off by 2x to 40x once re-capped (docs/JOB_SPEC.md).
pub const LIVE_CHECK_SLACK: f64 = 0.10;

/// Where a sweep stands with the live check.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum LiveCheckState {
    /// Nothing to check: the sweep relaunches, the spec says the job adapts, or no launch
    /// re-caps the CPU (the command depends on the CPU level).
    NotNeeded,
    /// The next point reached by re-capping the CPU is also measured on a fresh launch.
    Pending,
    Done(LiveCheck),
}

/// Half-width of a throughput's interval.
fn half_width(t: &Throughput) -> f64 {
    (t.ci95_high - t.ci95_low) / 2.0
}

/// The check's verdict on two measurements of one point.
pub fn compare(cpu: f64, live: &Throughput, relaunched: &Throughput) -> LiveCheck {
    let reference = relaunched.samples_per_s.max(f64::MIN_POSITIVE);
    let tolerance = (half_width(live) + half_width(relaunched)) / reference + LIVE_CHECK_SLACK;
    let differ = (live.samples_per_s - relaunched.samples_per_s).abs() / reference > tolerance;
    LiveCheck {
        cpu,
        live_samples_per_s: live.samples_per_s,
        relaunch_samples_per_s: relaunched.samples_per_s,
        tolerance,
        outcome: if differ { "relaunch" } else { "live" }.into(),
    }
}

/// One line saying what the check found, for the screen and `show`.
pub fn describe(check: &LiveCheck) -> String {
    let gap = (check.live_samples_per_s / check.relaunch_samples_per_s.max(f64::MIN_POSITIVE)
        - 1.0)
        * 100.0;
    match check.outcome.as_str() {
        "live" => format!(
            "live check at {} CPUs: re-capped {:.1} vs fresh start {:.1} samples/s ({gap:+.1}%, \
             within ±{:.1}%): re-capping the running job is valid",
            check.cpu,
            check.live_samples_per_s,
            check.relaunch_samples_per_s,
            check.tolerance * 100.0
        ),
        _ => format!(
            "live check at {} CPUs: re-capped {:.1} vs fresh start {:.1} samples/s ({gap:+.1}%, \
             beyond ±{:.1}%): the job sizes itself from the CPUs it sees at start (threads, \
             workers), so every point is measured on a fresh launch; set sweep.adapts_to_caps = \
             false to skip the check, or make the job follow $PROFILER_CPUS",
            check.cpu,
            check.live_samples_per_s,
            check.relaunch_samples_per_s,
            check.tolerance * 100.0
        ),
    }
}

impl Sweep<'_> {
    /// Whether `p`, reached by re-capping a launch that started at `launch_first`, is the
    /// point to check.
    pub(super) fn live_check_due(&self, launch_first: &Point, p: &Point) -> bool {
        self.live_check == LiveCheckState::Pending && p.cpu != launch_first.cpu
    }

    /// Measures `p` again on a fresh launch, records the cell that stands, and decides the mode
    /// for the rest of the sweep. `live` is the cell the re-capped job gave at `p`.
    pub(super) fn conclude_live_check(&mut self, p: &Point, live: Cell) -> Result<(), SweepError> {
        let started = Instant::now();
        self.observer.status(&format!(
            "{}: live check: measuring the same point on a fresh launch",
            label(p)
        ));
        let limit = self.memory.bytes().map(|b| b[p.mem]);
        let mut run = self.launch(p, limit)?;
        let fresh = match self.warm_up(&mut run, p, started)? {
            Err(cell) => cell,
            Ok(()) => match self.measure(&mut run, p, started)? {
                Outcome::Cell(c) | Outcome::Died(c) => c,
            },
        };
        run.job.stop();
        drop(run);
        let (check, kept) = match (&live.throughput, &fresh.throughput) {
            (Some(l), Some(f)) => {
                let check = compare(p.cpu, l, f);
                let kept = if check.outcome == "live" { live } else { fresh };
                (check, kept)
            }
            // Without both rates nothing is proven: relaunch from here on, the safe mode.
            _ => {
                let check = LiveCheck {
                    cpu: p.cpu,
                    live_samples_per_s: live.samples_per_s().unwrap_or(0.0),
                    relaunch_samples_per_s: fresh.samples_per_s().unwrap_or(0.0),
                    tolerance: LIVE_CHECK_SLACK,
                    outcome: "relaunch".into(),
                };
                let kept = if fresh.throughput.is_some() {
                    fresh
                } else {
                    live
                };
                (check, kept)
            }
        };
        let line = describe(&check);
        if check.outcome == "live" {
            self.observer.note(&line);
        } else {
            self.observer.warn(&line);
            self.mode = SweepMode::Relaunch;
        }
        self.live_check = LiveCheckState::Done(check.clone());
        self.record(kept)?;
        self.update_header(|h| h.live_check = Some(check))
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
        }
    }

    /// The measured case: 4.6 samples/s re-capped against 66.2 relaunched is a switch; two
    /// measurements 3% apart with 1% intervals agree.
    #[test]
    fn rates_apart_beyond_intervals_plus_slack_switch_to_relaunch() {
        let c = compare(1.0, &tp(4.6, 0.3), &tp(66.2, 1.0));
        assert_eq!(c.outcome, "relaunch");
        assert!(describe(&c).contains("fresh launch"), "{}", describe(&c));
        assert_eq!(
            compare(1.0, &tp(103.0, 1.0), &tp(100.0, 1.0)).outcome,
            "live"
        );
        // 13% apart: beyond 10% + 2% of intervals.
        assert_eq!(
            compare(1.0, &tp(113.0, 1.0), &tp(100.0, 1.0)).outcome,
            "relaunch"
        );
        // 13% apart but with wide intervals (±5% each): agree.
        assert_eq!(
            compare(1.0, &tp(113.0, 5.0), &tp(100.0, 5.0)).outcome,
            "live"
        );
    }

    #[test]
    fn the_verdict_is_finite_for_a_stalled_relaunch() {
        let c = compare(0.5, &tp(10.0, 1.0), &tp(0.0, 0.0));
        assert!(c.tolerance.is_finite() && c.outcome == "relaunch");
    }
}
