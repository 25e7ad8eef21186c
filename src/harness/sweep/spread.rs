//! The spread between launches, and more blocks: a scheduler that reads a cell starts the job
//! again, so every cell's interval must say where another launch lands, and its relative rate
//! needs blocks to average over. After the points of a parameter combination are measured, the
//! sweep measures them again, pass after pass, each pass a block that opens with the reference
//! (one launch for the whole pass where re-capping is valid, as in the first): `measure.launches`
//! passes in all, and, where that is more than one, one more in place of each block left out
//! because its reference drifted or other processes disturbed it (at most [`MAX_EXTRA_PASSES`]), while the passes so far took less than
//! `measure.launches_budget_s`. Then, where more than one pass was asked for, up to
//! [`DOUBT_PASSES`] more of the reference and the cells whose side of the best-case demand's
//! threshold another sweep could read otherwise (`crate::matrix::doubt`): a demand that rests
//! on a coin toss is worth a block or two more, a cell far from the threshold is not.
//! Each point's cell is then the mean of its launches, with an interval for where one more
//! lands. When the sweep ends, the spread pooled over every point measured on several launches
//! is the floor of every cell's interval ([`hold_pooled_spread`]), for the cells that had a
//! single launch (modelled ones, a point whose relaunch failed) and the points whose few
//! launches happened to agree, and is recorded in the header.

use super::blocks::MAX_EXTRA_PASSES;
use super::launches::hold_pooled_spread;
use super::live_check::LiveCheckState;
use super::{Sweep, SweepError};
use crate::harness::sweep::plan::{Point, PointSource, label};
use crate::matrix::doubt::in_doubt;
use crate::matrix::relative::RelativeRate;
use crate::matrix::{Cell, CellSource, DEFAULT_EPS, Matrix, relative_rates};
use std::collections::BTreeMap;

/// Passes, at most, made after those asked for where the best-case demand is in doubt
/// (`crate::matrix::doubt`): each adds a block of the reference and the cells in doubt.
pub const DOUBT_PASSES: u32 = 2;

/// What a pass after the first is for.
enum Pass {
    /// One of the `measure.launches` passes asked for, or one in place of blocks left out (it
    /// also makes the live check where that is still owed).
    Asked,
    /// The live check's fresh launch, beyond the passes asked for: only the check's point and
    /// the reference.
    Check,
    /// The reference and the cells in doubt against the best-case demand's threshold, each
    /// with why.
    Doubt(Vec<(Point, String)>),
}

/// The progress line of a pass: its points, its number of `total`, and the passes `owed` in
/// place of blocks left out.
fn pass_status(points: usize, pass: u32, total: u32, owed: u32) -> String {
    format!(
        "measuring {points} point(s) again (pass {pass} of {total}{}), the reference first and \
         the rest in a fresh random order",
        match owed {
            0 => String::new(),
            n => format!(", {n} of them in place of blocks left out"),
        }
    )
}

impl Sweep<'_> {
    /// Measures the measured points of `params` again, pass after pass, until `measure.launches`
    /// passes were measured, none is owed for a block left out and the live check is made.
    /// `true` where the check found re-capping not valid: the points of `params` were dropped,
    /// to be measured again on a fresh launch each.
    pub(super) fn launch_again(
        &mut self,
        params: &BTreeMap<String, String>,
    ) -> Result<bool, SweepError> {
        let started = std::time::Instant::now();
        let launches = self.opts.spec.spec.measure.launches;
        let (mut pass, mut doubt_passes) = (1, 0);
        loop {
            // One launch a point is what was asked for: a block left out is only marked. A pass
            // that walks in rounds measures as many blocks again.
            let owed = match launches {
                0 | 1 => 0,
                _ => self
                    .left_out_blocks(params)
                    .div_ceil(self.rounds_per_launch())
                    .min(MAX_EXTRA_PASSES),
            };
            let checking = self.live_check.owes_a_pass();
            let kind = if pass < launches + owed {
                Pass::Asked
            } else if checking {
                Pass::Check
            } else if launches > 1 && doubt_passes < DOUBT_PASSES {
                match self.demand_in_doubt(params) {
                    doubt if doubt.is_empty() => break,
                    doubt => Pass::Doubt(doubt),
                }
            } else {
                break;
            };
            let mut points = self.points_to_launch_again(params);
            if checking {
                // Also where re-capping made the point fail on the first launch.
                points.extend(
                    self.live_check_point(params)
                        .filter(|p| !points.contains(p)),
                );
            }
            match &kind {
                Pass::Asked => {}
                Pass::Check => {
                    points = self.live_check_points(points);
                    if points.len() < 2 {
                        // One CPU level: nothing is re-capped, nothing to check.
                        self.live_check = LiveCheckState::NotNeeded;
                        break;
                    }
                }
                Pass::Doubt(doubt) => {
                    let reference = self.reference_point(params);
                    points.retain(|p| *p == reference || doubt.iter().any(|(d, _)| d == p));
                    doubt_passes += 1;
                    let cells: Vec<&str> = doubt.iter().map(|(_, why)| why.as_str()).collect();
                    self.observer.note(&format!(
                        "the best-case demand is in doubt: {}; measuring {} point(s) again \
                         (pass {doubt_passes} of at most {DOUBT_PASSES} for the demand)",
                        cells.join("; "),
                        points.len(),
                    ));
                }
            }
            if points.is_empty() {
                break;
            }
            let spent = started.elapsed().as_secs_f64();
            if let Some(budget) = self.opts.spec.spec.measure.launches_budget_s
                && spent >= budget
                && !checking
            {
                self.observer.note(&format!(
                    "pass {} of {} point(s) not made: the passes after the first took {spent:.0} \
                     s of measure.launches_budget_s = {budget}",
                    pass + 1,
                    points.len()
                ));
                break;
            }
            if !matches!(kind, Pass::Doubt(_)) {
                let total = (launches + owed).max(pass + 1);
                self.observer
                    .status(&pass_status(points.len(), pass + 1, total, owed));
            }
            let mut walk = self.again_walk(points);
            self.start_live_check(walk.peek(&self.recorded()).as_ref());
            self.run_points(&mut walk)?;
            if self.conclude_live_check(params)? {
                // Re-capping was not valid: every point again, a fresh launch each.
                return Ok(true);
            }
            pass += 1;
        }
        Ok(false)
    }

    /// The measured points of `params` whose relative rate is in doubt against the best-case
    /// demand's threshold at the default eps ([`in_doubt`]), each with a few words on why.
    fn demand_in_doubt(&self, params: &BTreeMap<String, String>) -> Vec<(Point, String)> {
        let Some(levels) = self.mem.levels.bytes() else {
            return Vec::new();
        };
        let relative = relative_rates(&self.blocks.closed, &self.out.cells);
        let ours: Vec<(&Cell, Option<&RelativeRate>)> = (self.out.cells.iter().zip(&relative))
            .filter(|(c, _)| c.source == CellSource::Measured && &c.params == params)
            .map(|(c, r)| (c, r.as_ref()))
            .collect();
        let rates: Vec<Option<&RelativeRate>> = ours.iter().map(|(_, r)| *r).collect();
        (in_doubt(&rates, DEFAULT_EPS).into_iter())
            .filter_map(|i| {
                let (c, r) = ours[i];
                let r = r?;
                let point = Point {
                    cpu: c.cpu,
                    mem: levels.iter().position(|&b| b == c.memory_bytes)?,
                    params: params.clone(),
                };
                let why = format!(
                    "{} reads {:.3} of the reference [{:.3}, {:.3}] over {} block(s), around \
                     the {:.2} of the best it must reach to count as best",
                    label(&point),
                    r.rate,
                    r.ci95_low,
                    r.ci95_high,
                    r.blocks,
                    1.0 - DEFAULT_EPS
                );
                Some((point, why))
            })
            .collect()
    }

    /// The measured points of `params`, to measure again.
    fn points_to_launch_again(&self, params: &BTreeMap<String, String>) -> Vec<Point> {
        let Some(levels) = self.mem.levels.bytes() else {
            return Vec::new();
        };
        self.out
            .cells
            .iter()
            .filter(|c| c.source == CellSource::Measured && &c.params == params)
            .filter_map(|c| {
                let mem = levels.iter().position(|&b| b == c.memory_bytes)?;
                Some(Point {
                    cpu: c.cpu,
                    mem,
                    params: params.clone(),
                })
            })
            .collect()
    }

    /// Holds the spread between launches the sweep measured in every cell's interval, records
    /// it in the header, and rewrites the file. Applying it twice (a resumed sweep) changes
    /// nothing more.
    pub(super) fn hold_launch_spread(&mut self) -> Result<(), SweepError> {
        let Some(spread) = hold_pooled_spread(&mut self.out.cells) else {
            return Ok(());
        };
        self.observer.note(&spread.describe());
        let mut header = self
            .out
            .header
            .clone()
            .unwrap_or_else(|| self.make_header());
        header.launch_spread = Some(spread);
        self.out.header = Some(header);
        self.rewrite()
    }

    /// Writes the header and every cell recorded so far over the matrix file.
    pub(super) fn rewrite(&mut self) -> Result<(), SweepError> {
        self.ensure_writer()?;
        let matrix = Matrix {
            header: self
                .out
                .header
                .clone()
                .unwrap_or_else(|| self.make_header()),
            cells: self.out.cells.clone(),
        };
        self.out
            .writer
            .as_mut()
            .expect("ensured")
            .replace_all(&matrix)?;
        Ok(())
    }
}
