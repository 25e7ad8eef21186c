//! The live check: a live sweep re-caps one running job from level to level, which measures
//! what a fresh start at each level would only if the job does not size itself from the CPUs
//! it saw at start (PyTorch, OpenMP, MKL and oneDNN size their thread pools once; DataLoader
//! workers are started once). So the check compares ratios inside launches started at both
//! ends: one starts at the reference (the top CPU level) and is re-capped down, one starts
//! fresh at the lowest CPU level and is re-capped up to the reference. On a grid both come
//! before any other cell (`Sweep::check_first`, passes.rs); a search makes the second on its
//! second pass. Each reads the lowest level against the reference of its own blocks, so a
//! host that slowed one launch against the other does not decide the check:
//!
//! - the tolerance is a fixed slack ([`LIVE_CHECK_SLACK`]) plus the spread the two means of
//!   log-ratios have from the blocks' own spread (pooled over the sweep's cells, Student's
//!   quantile); it is never wider than [`LIVE_CHECK_MAX_TOLERANCE`], so no difference above
//!   15% is ever accepted;
//! - within the tolerance: re-capping is valid, and both launches' cells stand;
//! - beyond it, but within the slack plus the spread where that is wider than the tolerance
//!   (two blocks a side in a spell of the host), and less than [`LIVE_CHECK_LEVEL_FACTOR`]
//!   times apart: too few blocks to tell, the check is undecided and made again on the
//!   next pass's fresh launch, with the blocks of both;
//! - beyond both: the job sizes itself, the cells measured by re-capping are dropped and every
//!   other point is measured on a fresh launch;
//! - where a launch's blocks were all left out (other processes disturbed them, or the
//!   reference drifted), the check has no ratio from it and is made again on the next pass's
//!   fresh launch; after [`LIVE_CHECK_ATTEMPTS`] such launches (or undecided ones) the levels
//!   decide what they can: rates at the point [`LIVE_CHECK_LEVEL_FACTOR`] times apart or more
//!   are a job that sizes itself, which no spell of the host or disturbance explains, and the
//!   sweep relaunches; nearer, the check is `unproven`: the sweep keeps re-capping and says
//!   so, since a busy machine would decide a relaunch as wrongly as a re-cap, and the blocks
//!   measured before it stay in the relative rates.
//!
//! The header records the rates, the tolerance, the decision and its reason.

use super::SweepObserver;
use crate::harness::sweep::plan::{Axes, MemoryLevels, Point};
use crate::matrix::LiveCheckOutcome::{Live, Relaunch, Undecided, Unproven};
use crate::matrix::relative::{OWN_SPREAD_DF, block_spread, left_out_launches, ratios_by_launch};
use crate::matrix::{Cell, CellKey, LiveCheck, SweepBlock};
use crate::stats::mean;
use std::collections::BTreeMap;

/// Relative difference two ratios may show beyond their measured spread and still agree: what
/// re-capping itself may change (the CFS quota's period, a cold cache after the re-cap), not
/// the spread between blocks, which is measured.
pub const LIVE_CHECK_SLACK: f64 = 0.05;
/// The widest tolerance: a re-capped ratio more than this far from a fresh launch's is never
/// accepted. A job that sizes itself from the CPUs it saw at start is off by 2x to 40x
/// (docs/findings/live-check.md).
pub const LIVE_CHECK_MAX_TOLERANCE: f64 = 0.15;
/// Fresh launches the check makes, at most, where other processes disturbed their blocks or
/// its blocks were too few to tell.
pub const LIVE_CHECK_ATTEMPTS: u32 = 2;
/// Where the check has no ratio from one side, a re-capped rate this many times off the fresh
/// launch's at the same point still proves the job sizes itself: launches of one job land
/// 13-30% apart in the host's spells and a disturbance that leaves blocks measured slows a
/// capped job by less than half, while a job that sizes itself is off by 2x to 40x
/// (docs/findings/live-check.md).
pub const LIVE_CHECK_LEVEL_FACTOR: f64 = 2.0;

/// Where a sweep stands with the live check.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum LiveCheckState {
    /// Nothing to check: the sweep relaunches, the spec says the job adapts, or no launch
    /// re-caps the CPU (the command depends on the CPU level).
    NotNeeded,
    /// The next pass is the check's fresh launch; the check's `earlier` fresh launches had
    /// every block that measured its point left out.
    Pending {
        earlier: Vec<u32>,
    },
    /// The pass being measured started with the check's fresh launch.
    Checking(Box<Checking>),
    /// The check's fresh launch was heard, but every block of the launches re-capped down to
    /// its point was left out: the next pass starts at the reference and re-caps down again.
    AwaitingLive(Box<Checking>),
    Done(LiveCheck),
}

/// The live check in progress: its point (the lowest CPU level at the top memory level), the
/// fresh launch that started there, and the check's earlier fresh launches there (started at
/// the point too, so never on the side re-capped down).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Checking {
    point: Point,
    launch: u32,
    earlier: Vec<u32>,
    /// Passes made again re-capped down since, their side having been left out.
    live_again: u32,
}

/// The check's point on both sides: the log-ratios and rates of the launches started at the
/// reference and re-capped down (`live`), and those of the fresh launches started at the point.
#[derive(Debug, Default, PartialEq)]
struct Sides {
    live: Vec<f64>,
    fresh: Vec<f64>,
    live_rates: Vec<f64>,
    /// The check's own fresh launch's first rate at the point.
    fresh_rate: Option<f64>,
}

impl Checking {
    fn is_fresh(&self, launch: u32) -> bool {
        launch == self.launch || self.earlier.contains(&launch)
    }

    /// Launches made for the check so far, this one included.
    fn attempts(&self) -> u32 {
        self.earlier.len() as u32 + self.live_again + 1
    }

    /// The check made again on the next pass's fresh launch, this one's counted as fresh.
    fn again_fresh(&self) -> LiveCheckState {
        LiveCheckState::Pending {
            earlier: [self.earlier.as_slice(), &[self.launch]].concat(),
        }
    }

    /// Splits the point's log-ratios by launch (`ratios`) and its visits between the two
    /// sides: every launch but the check's fresh ones started at the reference.
    fn sides(&self, ratios: &[(u32, f64)], visits: &[crate::matrix::Visit]) -> Sides {
        let mut out = Sides::default();
        for &(launch, log) in ratios {
            match self.is_fresh(launch) {
                true => out.fresh.push(log),
                false => out.live.push(log),
            }
        }
        for v in visits {
            if v.launch == self.launch {
                out.fresh_rate = out.fresh_rate.or(Some(v.samples_per_s));
            } else if !self.is_fresh(v.launch) {
                out.live_rates.push(v.samples_per_s);
            }
        }
        out
    }
}

impl LiveCheckState {
    /// Whether the next pass is the check's fresh launch.
    pub(super) fn is_pending(&self) -> bool {
        matches!(self, LiveCheckState::Pending { .. })
    }

    /// Whether the check needs another pass: its fresh launch, or a launch re-capped down.
    pub(super) fn owes_a_pass(&self) -> bool {
        matches!(
            self,
            LiveCheckState::Pending { .. } | LiveCheckState::AwaitingLive(_)
        )
    }
}

/// One launch's (or launches') log-ratios of the check's point to the reference, and its rate.
pub struct Side<'a> {
    pub logs: &'a [f64],
    pub samples_per_s: f64,
}

/// The check's verdict at CPU level `cpu`: the ratios of the launches started at the reference
/// (`live`, re-capped down) against those of the fresh launch started at the point (`fresh`),
/// given the standard deviation `sd` of one block's log-ratio with `df` degrees of freedom.
pub fn compare(cpu: f64, live: &Side, fresh: &Side, sd: f64, df: usize) -> LiveCheck {
    let (ka, kb) = (live.logs.len(), fresh.logs.len());
    let check = |outcome, tolerance: f64, ratio: Option<f64>, reason: String| LiveCheck {
        cpu,
        live_samples_per_s: live.samples_per_s,
        relaunch_samples_per_s: fresh.samples_per_s,
        tolerance,
        outcome,
        fresh_samples_per_s: Vec::new(),
        between_launch_spread: (sd > 0.0).then_some(sd),
        reason,
        reference_ratio: ratio,
    };
    if ka == 0 || kb == 0 || fresh.samples_per_s <= 0.0 {
        return check(
            Relaunch,
            LIVE_CHECK_SLACK,
            None,
            "no ratio to the reference from one of the two launches".into(),
        );
    }
    let d = mean(fresh.logs) - mean(live.logs);
    let q = if df > 0 {
        crate::stats::t_975(df)
    } else {
        1.96
    };
    let spread = (q * sd * (1.0 / ka as f64 + 1.0 / kb as f64).sqrt()).exp_m1();
    let tolerance = (LIVE_CHECK_SLACK + spread).min(LIVE_CHECK_MAX_TOLERANCE);
    let gap = d.abs().exp_m1();
    // The fresh start's rate as the live launches would have measured it: their rate at the
    // point times the fresh launch's ratio over theirs.
    let compared = live.samples_per_s * d.exp();
    let ratio = Some(compared / fresh.samples_per_s).filter(|r| r.is_finite());
    let blocks = |k: usize| match k {
        1 => "1 block".to_string(),
        k => format!("{k} blocks"),
    };
    let detail = format!(
        "its rate over the reference's {:.3} on the launch re-capped down ({}) and {:.3} on the \
         fresh launch ({}) are {:.1}% apart",
        mean(live.logs).exp(),
        blocks(ka),
        mean(fresh.logs).exp(),
        blocks(kb),
        100.0 * gap
    );
    // Ratios twice apart or more are a job that sizes itself, whatever the spread: the
    // sweep's spread pools the check's own point, whose two sides differ by what is tested.
    let explained = (LIVE_CHECK_SLACK + spread).min(LIVE_CHECK_LEVEL_FACTOR - 1.0);
    if gap <= tolerance {
        return check(
            Live,
            tolerance,
            ratio,
            format!(
                "{detail}, within {:.1}% slack plus {:.1}% for the blocks' spread ({:.1}% a block)",
                100.0 * LIVE_CHECK_SLACK,
                100.0 * spread,
                100.0 * sd
            ),
        );
    }
    if gap <= explained {
        return check(
            Undecided,
            tolerance,
            ratio,
            format!(
                "{detail}, beyond the {:.1}% tolerance but within the {:.1}% the blocks' spread \
                 ({:.1}% a block) explains",
                100.0 * tolerance,
                100.0 * explained,
                100.0 * sd
            ),
        );
    }
    check(
        Relaunch,
        tolerance,
        ratio,
        format!(
            "{detail}, beyond the {:.1}% tolerance and the {:.1}% the blocks' spread explains",
            100.0 * tolerance,
            100.0 * explained
        ),
    )
}

/// One line saying what the check found, for the screen and `show`.
pub fn describe(check: &LiveCheck) -> String {
    let compared = check.compared_samples_per_s();
    let gap = (check.live_samples_per_s / compared.max(f64::MIN_POSITIVE) - 1.0) * 100.0;
    let (fresh, reason) = (check.fresh_label(), check.reason_suffix());
    match check.outcome {
        Live => format!(
            "live check at {} CPUs: re-capped {:.1} vs {fresh} {:.1} samples/s ({gap:+.1}%, \
             within ±{:.1}%): re-capping the running job is valid{reason}",
            check.cpu,
            check.live_samples_per_s,
            compared,
            check.tolerance * 100.0
        ),
        Unproven => format!(
            "live check at {} CPUs unproven: {}; re-capping the running job is taken as valid \
             and the sweep goes on, but a job that sizes itself from the CPUs it sees at start \
             would be mismeasured: sweep again on a quiet machine, or set sweep.adapts_to_caps",
            check.cpu, check.reason
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

/// The check at `cpu` where the ratios did not decide it after every attempt (`why`: a side
/// had no ratio left, or its blocks were too few to tell): the levels,
/// re-capped (`live`) and fresh at the point, decide where they are
/// [`LIVE_CHECK_LEVEL_FACTOR`] times apart or more (a relaunch); nearer, or where a side has
/// no rate, the check is unproven.
pub fn unheard_verdict(cpu: f64, live: f64, fresh: f64, why: String) -> LiveCheck {
    let measured = live > 0.0 && fresh > 0.0 && live.is_finite() && fresh.is_finite();
    let factor = match measured {
        true => (live / fresh).max(fresh / live),
        false => 1.0,
    };
    let (outcome, reason) = match factor >= LIVE_CHECK_LEVEL_FACTOR {
        true => (
            Relaunch,
            format!(
                "{why}; the rates at the point are {factor:.1} times apart, more than the \
                 {LIVE_CHECK_LEVEL_FACTOR} times a spell of the host or a disturbance explains"
            ),
        ),
        false => (Unproven, why),
    };
    LiveCheck {
        cpu,
        live_samples_per_s: live,
        relaunch_samples_per_s: fresh,
        tolerance: LIVE_CHECK_MAX_TOLERANCE,
        outcome,
        fresh_samples_per_s: Vec::new(),
        between_launch_spread: None,
        reason,
        reference_ratio: None,
    }
}

/// A decided check, for the header: `by_levels` where the launches it may take ran out
/// before its blocks could decide it and the levels did ([`unheard_verdict`]), which is said as
/// a warning whatever it finds.
pub(super) struct Verdict {
    pub check: LiveCheck,
    pub by_levels: bool,
}

impl Verdict {
    /// Whether re-capping was found not valid: the points are measured again, a fresh launch
    /// each.
    pub(super) fn relaunches(&self) -> bool {
        match self.by_levels {
            true => self.check.outcome == Relaunch,
            false => self.check.outcome != Live,
        }
    }

    /// Whether it is said as a note rather than a warning.
    pub(super) fn is_note(&self) -> bool {
        !self.by_levels && self.check.outcome == Live
    }
}

impl LiveCheckState {
    /// Marks the pass about to start at `first` as the check's fresh launch, `launch`, where
    /// the check is still to make and `first` is not the reference.
    /// Where the pass has no point below the reference (one CPU level), there is nothing to
    /// check.
    pub(super) fn start(&mut self, axes: &Axes, first: Option<&Point>, launch: u32) {
        let LiveCheckState::Pending { earlier } = &*self else {
            return;
        };
        *self = match first.filter(|p| **p != axes.reference_point(&p.params)) {
            Some(first) => LiveCheckState::Checking(Box::new(Checking {
                point: first.clone(),
                launch,
                earlier: earlier.clone(),
                live_again: 0,
            })),
            None => LiveCheckState::NotNeeded,
        };
    }

    /// Whether `launch`, at `first`, is the live check's fresh launch (it must start there).
    pub(super) fn is_check_launch(&self, first: &Point, launch: u32) -> bool {
        matches!(self, LiveCheckState::Checking(c) if c.point == *first && c.launch == launch)
    }

    /// Decides the check once its fresh launch was measured, from the `blocks` and `cells`
    /// recorded at the memory `levels`; `None` while it is not decided (it is made again on a
    /// later pass, as `observer` is told).
    pub(super) fn conclude(
        &mut self,
        observer: &mut dyn SweepObserver,
        blocks: &[SweepBlock],
        cells: &[Cell],
        levels: &MemoryLevels,
    ) -> Option<Verdict> {
        let (LiveCheckState::Checking(c) | LiveCheckState::AwaitingLive(c)) = self.clone() else {
            return None;
        };
        let key =
            (levels.bytes()).map(|b| CellKey::new(c.point.cpu, b[c.point.mem], &c.point.params));
        let cell = cells.iter().find(|x| Some(x.key()) == key);
        let (sides, left_out) = match cell {
            Some(cell) => (
                c.sides(&ratios_by_launch(blocks, cell), &cell.visits),
                left_out_launches(blocks, cell),
            ),
            None => (Sides::default(), Vec::new()),
        };
        let Sides {
            live,
            fresh,
            live_rates,
            fresh_rate,
        } = sides;
        // A side whose blocks were all left out says nothing either way.
        let live_unheard = live.is_empty() && (left_out.iter()).any(|&l| !c.is_fresh(l));
        let fresh_unheard = fresh.is_empty() && left_out.contains(&c.launch);
        if live_unheard || fresh_unheard {
            return self.unheard(
                observer,
                &c,
                fresh_unheard,
                mean(&live_rates),
                fresh_rate.unwrap_or(0.0),
            );
        }
        // The point's own spread around each launch's mean where it has blocks enough for
        // one (a two-sample pooled variance), else the sweep's.
        let own_df = (live.len() + fresh.len()).saturating_sub(2);
        let (sd, df) = match own_df >= OWN_SPREAD_DF {
            true => {
                let squares = |xs: &[f64]| xs.iter().map(|x| (x - mean(xs)).powi(2)).sum::<f64>();
                (
                    ((squares(&live) + squares(&fresh)) / own_df as f64).sqrt(),
                    own_df,
                )
            }
            false => block_spread(blocks, cells),
        };
        let check = compare(
            c.point.cpu,
            &Side {
                logs: &live,
                samples_per_s: mean(&live_rates),
            },
            &Side {
                logs: &fresh,
                samples_per_s: fresh_rate.unwrap_or(0.0),
            },
            sd,
            df,
        );
        if check.outcome == Undecided {
            return self.undecided(observer, &c, check);
        }
        *self = LiveCheckState::Done(check.clone());
        Some(Verdict {
            check,
            by_levels: false,
        })
    }

    /// One side of the check had every block it measured the point in left out: the check's
    /// fresh launch (`fresh_unheard`), measured again on the next pass's fresh launch, or the
    /// launches re-capped down, measured again on a next pass that starts at the reference and
    /// re-caps down (a fresh launch more would say nothing of re-capping). After
    /// [`LIVE_CHECK_ATTEMPTS`] launches the levels decide ([`unheard_verdict`]).
    fn unheard(
        &mut self,
        observer: &mut dyn SweepObserver,
        c: &Checking,
        fresh_unheard: bool,
        live_samples_per_s: f64,
        fresh_samples_per_s: f64,
    ) -> Option<Verdict> {
        let attempts = c.attempts();
        let (side, again) = match fresh_unheard {
            true => ("the fresh launch", "on the next pass's fresh launch"),
            false => (
                "the launches re-capped down",
                "on a next pass re-capped down from the reference",
            ),
        };
        let why = format!(
            "every block that measured it on {side} was left out (other processes disturbed \
             it, or the reference drifted)"
        );
        if attempts < LIVE_CHECK_ATTEMPTS {
            observer.warn(&format!(
                "live check at {} CPUs: {why}; the check is made again {again}",
                c.point.cpu
            ));
            *self = match fresh_unheard {
                true => c.again_fresh(),
                false => LiveCheckState::AwaitingLive(Box::new(Checking {
                    live_again: c.live_again + 1,
                    ..c.clone()
                })),
            };
            return None;
        }
        let check = unheard_verdict(
            c.point.cpu,
            live_samples_per_s,
            fresh_samples_per_s,
            format!("{why}, after {attempts} launches for the check"),
        );
        self.decided_by_levels(check)
    }

    /// A verdict of [`unheard_verdict`]: the check is done.
    fn decided_by_levels(&mut self, check: LiveCheck) -> Option<Verdict> {
        *self = LiveCheckState::Done(check.clone());
        Some(Verdict {
            check,
            by_levels: true,
        })
    }

    /// The blocks were too few to tell the ratios apart (`check` is undecided): the check
    /// is made again on the next pass's fresh launch, its blocks added to this one's; after
    /// [`LIVE_CHECK_ATTEMPTS`] launches the levels decide ([`unheard_verdict`]).
    fn undecided(
        &mut self,
        observer: &mut dyn SweepObserver,
        c: &Checking,
        check: LiveCheck,
    ) -> Option<Verdict> {
        let attempts = c.attempts();
        if attempts < LIVE_CHECK_ATTEMPTS {
            observer.warn(&format!(
                "live check at {} CPUs cannot tell yet: {}; the check is made again on the next \
                 pass's fresh launch",
                c.point.cpu, check.reason
            ));
            *self = c.again_fresh();
            return None;
        }
        let verdict = unheard_verdict(
            c.point.cpu,
            check.live_samples_per_s,
            check.relaunch_samples_per_s,
            format!("{}, after {attempts} launches for the check", check.reason),
        );
        self.decided_by_levels(verdict)
    }
}

/// The check's point for `params`: the lowest CPU level at the top memory level whose cell
/// is not infeasible (it may have failed on the launch re-capped down to it).
pub(super) fn check_point(
    levels: &MemoryLevels,
    cells: &[Cell],
    params: &BTreeMap<String, String>,
) -> Option<Point> {
    let top = levels.bytes()?[0];
    let cpu = (cells.iter())
        .filter(|c| &c.params == params && c.memory_bytes == top)
        .filter(|c| c.source != crate::matrix::CellSource::Infeasible)
        .map(|c| c.cpu)
        .min_by(f64::total_cmp)?;
    Some(Point {
        cpu,
        mem: 0,
        params: params.clone(),
    })
}

/// Of `points` (one parameter combination), those the check's fresh launch needs: the
/// lowest CPU level at the top memory level, and the reference.
pub(super) fn check_points(axes: &Axes, points: Vec<Point>) -> Vec<Point> {
    let Some(reference) = points.first().map(|p| axes.reference_point(&p.params)) else {
        return points;
    };
    let low = (points.iter())
        .filter(|p| p.mem == reference.mem)
        .map(|p| p.cpu)
        .fold(f64::INFINITY, f64::min);
    (points.into_iter())
        .filter(|p| p.mem == reference.mem && (p.cpu == low || *p == reference))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(ratios: &[f64], rate: f64) -> (Vec<f64>, f64) {
        (ratios.iter().map(|r| r.ln()).collect(), rate)
    }

    fn check(live: (Vec<f64>, f64), fresh: (Vec<f64>, f64), sd: f64, df: usize) -> LiveCheck {
        compare(
            1.0,
            &Side {
                logs: &live.0,
                samples_per_s: live.1,
            },
            &Side {
                logs: &fresh.0,
                samples_per_s: fresh.1,
            },
            sd,
            df,
        )
    }

    /// The check made again on a second fresh launch: the first fresh launch started at the
    /// point too, so its ratio joins the fresh side, never the side re-capped down (where it
    /// would agree with the second fresh launch and pass a job that sizes itself). A later
    /// pass started at the reference is re-capped down.
    #[test]
    fn an_earlier_fresh_launch_is_never_counted_as_re_capped() {
        let c = Checking {
            point: Point {
                cpu: 1.0,
                mem: 0,
                params: BTreeMap::new(),
            },
            launch: 3,
            earlier: vec![2],
            live_again: 0,
        };
        let visit = |launch, rate| crate::matrix::fixtures::visit(launch, rate, 0.0, 0.0);
        let visits = [
            visit(1, 8.9),
            visit(2, 80.1),
            visit(3, 64.8),
            visit(4, 60.0),
        ];
        let ratios = [(1, -2.5), (2, 0.034), (3, 0.031), (4, 0.03)];
        let sides = c.sides(&ratios, &visits);
        assert_eq!(
            sides,
            Sides {
                live: vec![-2.5, 0.03],
                fresh: vec![0.034, 0.031],
                live_rates: vec![8.9, 60.0],
                fresh_rate: Some(64.8),
            }
        );
    }

    /// A job that sizes itself: re-capped down it keeps a quarter of the reference's rate,
    /// started fresh at the point it keeps 0.9 of it: far beyond any tolerance.
    #[test]
    fn a_job_that_sizes_itself_is_sent_to_relaunch() {
        let c = check(
            side(&[0.25, 0.24, 0.26], 100.0),
            side(&[0.9, 0.88], 360.0),
            0.03,
            6,
        );
        assert_eq!(c.outcome, Relaunch, "{c:?}");
        assert!(describe(&c).contains("sizes itself"), "{}", describe(&c));
    }

    /// A host that ran the fresh launch 30% slower changes both of its rates, not their ratio:
    /// the check agrees, and the fresh rate is read at the live launches' speed.
    #[test]
    fn a_slowed_launch_does_not_decide_the_check() {
        let c = check(
            side(&[0.25, 0.255, 0.245], 300.0),
            side(&[0.252, 0.248], 210.0),
            0.02,
            6,
        );
        assert_eq!(c.outcome, Live, "{c:?}");
        let compared = c.compared_samples_per_s();
        assert!((compared / 300.0 - 1.0).abs() < 0.01, "{compared}");
        assert!(
            c.reason.contains("3 blocks") && c.reason.contains("2 blocks"),
            "{}",
            c.reason
        );
    }

    /// The tolerance is the slack plus Student's spread of the two means, never above 15%:
    /// 12% apart passes with a wide spread, fails with a narrow one, and 16% never passes. Where
    /// the spread explains more than 15%, ratios beyond the tolerance and within it are
    /// undecided (more blocks are measured); beyond it they relaunch.
    #[test]
    fn the_tolerance_follows_the_blocks_spread_up_to_fifteen_percent() {
        let live = || side(&[0.5, 0.5], 100.0);
        let wide = check(live(), side(&[0.56], 112.0), 0.05, 4);
        assert_eq!(wide.outcome, Live, "{wide:?}");
        let narrow = check(live(), side(&[0.56], 112.0), 0.01, 4);
        assert_eq!(narrow.outcome, Relaunch, "{narrow:?}");
        let expected = LIVE_CHECK_SLACK + (crate::stats::t_975(4) * 0.01 * 1.5f64.sqrt()).exp_m1();
        assert!((narrow.tolerance - expected).abs() < 1e-12);
        for sd in [0.05, 0.2, 1.0] {
            let c = check(live(), side(&[0.58], 116.0), sd, 2);
            assert!(c.tolerance <= LIVE_CHECK_MAX_TOLERANCE + 1e-12, "{c:?}");
            assert_eq!(c.outcome, Undecided, "{c:?}");
        }
        // 32% apart on two blocks a side of 11% each (a default sweep in a spell): undecided;
        // a job that sizes itself, 4 times apart, relaunches at that spread.
        let spell = check(live(), side(&[0.66, 0.66], 132.0), 0.112, 4);
        assert_eq!(spell.outcome, Undecided, "{spell:?}");
        assert!(spell.reason.contains("within the"), "{}", spell.reason);
        let sizes_itself = check(
            side(&[0.125, 0.125], 25.0),
            side(&[0.5, 0.5], 100.0),
            0.112,
            4,
        );
        assert_eq!(sizes_itself.outcome, Relaunch, "{sizes_itself:?}");
        // Twice apart is never undecided, however wide the spread (one that pools both sides
        // of a job that sizes itself: 149% a block).
        let pooled = check(
            side(&[0.057, 0.057], 497.0),
            side(&[1.02; 4], 5326.0),
            1.488,
            4,
        );
        assert_eq!(pooled.outcome, Relaunch, "{pooled:?}");
        let narrow = check(live(), side(&[0.58], 116.0), 0.01, 4);
        assert_eq!(narrow.outcome, Relaunch, "{narrow:?}");
    }

    /// Without a ratio from either launch the safe mode is chosen, and the record is finite.
    #[test]
    fn no_ratio_relaunches() {
        let c = check(side(&[], 0.0), side(&[0.5], 10.0), 0.0, 0);
        assert_eq!(c.outcome, Relaunch);
        assert!(c.tolerance.is_finite() && c.reference_ratio.is_none());
    }

    /// With no ratio from one side, levels several times apart still send the job to a
    /// relaunch; levels a spell could explain, or a side without a rate, leave it unproven.
    #[test]
    fn levels_far_apart_decide_an_unheard_check() {
        let verdict = |live, fresh| unheard_verdict(1.0, live, fresh, "why".into()).outcome;
        assert_eq!(verdict(8.8, 55.7), Relaunch);
        assert_eq!(verdict(55.7, 8.8), Relaunch);
        assert_eq!(verdict(40.0, 55.7), Unproven);
        assert_eq!(verdict(0.0, 55.7), Unproven);
        assert_eq!(verdict(8.8, 0.0), Unproven);
        let c = unheard_verdict(1.0, 8.8, 55.7, "why".into());
        assert!(
            c.reason
                .starts_with("why; the rates at the point are 6.3 times apart")
        );
        assert!(describe(&c).contains("every point is measured on a fresh launch"));
    }

    /// Matrices written before the verdict was an enum hold these words: they read the same.
    #[test]
    fn each_verdict_is_written_as_the_word_it_displays() {
        for o in [Live, Relaunch, Unproven, Undecided] {
            let word = format!("\"{o}\"");
            assert_eq!(serde_json::to_string(&o).unwrap(), word);
            assert_eq!(
                serde_json::from_str::<crate::matrix::LiveCheckOutcome>(&word).unwrap(),
                o
            );
        }
        assert_eq!(Relaunch.to_string(), "relaunch");
    }
}
