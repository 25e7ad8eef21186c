//! The spread between launches: a scheduler that reads a cell starts the job again, so every
//! cell's interval must say where another launch lands. After the points of a parameter
//! combination are measured, the sweep launches them again, pass after pass (one launch for
//! the whole pass where re-capping is valid, as in the first), while the sequential rule of
//! [`another_launch`] asks for another launch of some point, at most `measure.launches`
//! launches a point, and while the passes so far took less than `measure.launches_budget_s`.
//! Each point's cell is then the mean of its launches, with an interval for where one more
//! lands. When the sweep ends, the spread pooled over every point measured on
//! several launches is the floor of every cell's interval ([`hold_pooled_spread`]), for the
//! cells that had a single launch (modelled ones, a point whose relaunch failed) and the
//! points whose few launches happened to agree, and is recorded in the header.

use super::launches::{add_launch, another_launch, hold_pooled_spread, launch_rates};
use super::{Sweep, SweepError};
use crate::harness::plan::{Again, Point};
use crate::matrix::{Cell, CellSource, Matrix};
use std::collections::BTreeMap;

impl Sweep<'_> {
    fn max_launches(&self) -> u32 {
        self.opts.spec.spec.measure.launches
    }

    /// Launches the measured points of `params` again while the sequential rule asks for
    /// another launch of any of them.
    pub(super) fn launch_again(
        &mut self,
        params: &BTreeMap<String, String>,
    ) -> Result<(), SweepError> {
        let started = std::time::Instant::now();
        // One pass a launch at most: a point whose launch failed is not launched forever.
        for _ in 1..self.max_launches() {
            let points = self.points_to_launch_again(params);
            let Some(most) = points.iter().map(|(_, k)| *k).max() else {
                break;
            };
            let spent = started.elapsed().as_secs_f64();
            if let Some(budget) = self.opts.spec.spec.measure.launches_budget_s
                && spent >= budget
            {
                self.observer.note(&format!(
                    "launch {} of {} point(s) not made: the launches after the first took \
                     {spent:.0} s of measure.launches_budget_s = {budget}",
                    most + 1,
                    points.len()
                ));
                break;
            }
            self.observer.status(&format!(
                "launching {} point(s) again (launch {} of at most {}) to measure how far apart \
                 launches of the job land",
                points.len(),
                most + 1,
                self.max_launches()
            ));
            self.launching_again = true;
            let measured =
                self.run_points(&mut Again(points.into_iter().map(|(p, _)| p).collect()));
            self.launching_again = false;
            measured?;
        }
        Ok(())
    }

    /// The measured points of `params` the sequential rule launches again, highest CPU level
    /// and memory first (the order one live launch can walk), each with its launches so far.
    fn points_to_launch_again(&self, params: &BTreeMap<String, String>) -> Vec<(Point, usize)> {
        let Some(levels) = self.memory.bytes() else {
            return Vec::new();
        };
        let mut points: Vec<(Point, usize)> = self
            .cells
            .iter()
            .filter(|c| c.source == CellSource::Measured && &c.params == params)
            .filter_map(|c| {
                let rates = launch_rates(c.throughput.as_ref()?);
                let mem = levels.iter().position(|&b| b == c.memory_bytes)?;
                another_launch(&rates, self.max_launches()).then(|| {
                    let p = Point {
                        cpu: c.cpu,
                        mem,
                        params: params.clone(),
                    };
                    (p, rates.len())
                })
            })
            .collect();
        points.sort_by(|(a, _), (b, _)| b.cpu.total_cmp(&a.cpu).then(a.mem.cmp(&b.mem)));
        points
    }

    /// Adds `cell`, another launch's measurement of a recorded point, to that point's cell.
    pub(super) fn record_another_launch(&mut self, cell: Cell) -> Result<(), SweepError> {
        let key = cell.key();
        match self.cells.iter().position(|c| c.key() == key) {
            Some(i) => {
                self.cells[i] = add_launch(&self.cells[i], &cell);
                self.rewrite()
            }
            None => {
                self.launching_again = false;
                let recorded = self.record(cell);
                self.launching_again = true;
                recorded
            }
        }
    }

    /// Holds the spread between launches the sweep measured in every cell's interval, records
    /// it in the header, and rewrites the file. Applying it twice (a resumed sweep) changes
    /// nothing more.
    pub(super) fn hold_launch_spread(&mut self) -> Result<(), SweepError> {
        let Some(spread) = hold_pooled_spread(&mut self.cells) else {
            return Ok(());
        };
        self.observer.note(&spread.describe());
        let mut header = self.header.clone().unwrap_or_else(|| self.make_header());
        header.launch_spread = Some(spread);
        self.header = Some(header);
        self.rewrite()
    }

    /// Writes the header and every cell recorded so far over the matrix file.
    fn rewrite(&mut self) -> Result<(), SweepError> {
        self.ensure_writer()?;
        let matrix = Matrix {
            header: self.header.clone().unwrap_or_else(|| self.make_header()),
            cells: self.cells.clone(),
        };
        self.writer
            .as_mut()
            .expect("ensured")
            .replace_all(&matrix)?;
        Ok(())
    }
}
