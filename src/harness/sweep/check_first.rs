//! The live check before any other cell: whether re-capping a running job measures what a
//! fresh start would is known before the sweep measures cells by re-capping. Two launches
//! make it, and both keep what they measured at the level they started at:
//!
//! 1. a launch started at the reference (the top CPU level), re-capped down to the check's
//!    point (the lowest CPU level at the top memory level) and back up;
//! 2. a fresh launch started at the check's point, re-capped up to the reference.
//!
//! `live_check.rs` compares the point's ratio to the reference on both. Where re-capping is
//! valid, or the check cannot tell yet, every visit stands and the first pass goes on from
//! there, re-capping. Where it is not, every visit made after a re-cap is dropped: the
//! reference keeps the first launch's first visit, the point the second launch's, and the
//! sweep relaunches at every other point. The check costs the second launch and two re-capped visits, not a pass.

use super::launches::{add_visits, first_visit_only};
use super::plan::Point;
use super::{Sweep, SweepError};
use crate::matrix::{Cell, CellKey};
use crate::spec::SweepMode;
use std::collections::BTreeMap;

impl Sweep<'_> {
    /// Makes the live check of `params` first, where it is owed and the grid's `cpu_levels`
    /// have a level below the reference.
    pub(super) fn check_first(
        &mut self,
        params: &BTreeMap<String, String>,
        cpu_levels: &[f64],
    ) -> Result<(), SweepError> {
        if !(self.live_check.is_pending() && self.axes.blocks_per_launch()) {
            return Ok(());
        }
        let reference = self.axes.reference_point(params);
        let lowest = cpu_levels.iter().copied().fold(f64::INFINITY, f64::min);
        if !lowest.is_finite() || lowest >= reference.cpu {
            return Ok(());
        }
        let point = Point {
            cpu: lowest,
            mem: reference.mem,
            params: params.clone(),
        };
        if self.out.cells.iter().any(|c| &c.params == params) {
            // A sweep stopped before the verdict: which level each of its launches started at
            // is not on file, so the check starts afresh.
            self.observer.note(&format!(
                "live check at {lowest} CPUs: made afresh; the cells measured before the \
                 sweep stopped, with no verdict yet, are dropped"
            ));
            self.drop_combination(params, Vec::new())?;
        }
        self.observer.status(&format!(
            "live check at {lowest} CPUs: a launch started at the reference, re-capped down to it"
        ));
        let mut live = (self.blocks).check_walk(&self.axes, &reference, &point);
        self.run_points(&mut live)?;
        let started_at_reference = self.recorded_cell(&reference).map(first_visit_only);
        let recapped = self.take_cell(&point)?;
        self.observer.status(&format!(
            "live check at {lowest} CPUs: a fresh launch started there, re-capped up to the \
             reference"
        ));
        let check_points = vec![reference, point.clone()];
        let mut fresh = (self.blocks).again_walk(&self.axes, check_points, true, true);
        let next_launch = self.launch_id() + 1;
        self.live_check.start(&self.axes, Some(&point), next_launch);
        self.run_points(&mut fresh)?;
        let started_at_point = self.take_cell(&point)?;
        let both = match (&recapped, &started_at_point) {
            (Some(a), Some(b)) => Some(add_visits(a, b)),
            (a, b) => a.clone().or_else(|| b.clone()),
        };
        self.put_cell(both);
        match self.decide_live_check()? {
            Some(true) => {
                let kept = [started_at_reference, started_at_point];
                self.relaunch_keeping(params, kept.into_iter().flatten().collect())
            }
            _ => self.rewrite(),
        }
    }

    /// The key of `p`'s cell, once the memory levels are sized.
    pub(super) fn key_of(&self, p: &Point) -> Option<CellKey> {
        let bytes = self.mem.levels.bytes()?;
        Some(CellKey::new(p.cpu, bytes[p.mem], &p.params))
    }

    /// The cell recorded at `p`.
    fn recorded_cell(&self, p: &Point) -> Option<&Cell> {
        let key = self.key_of(p)?;
        self.out.cells.iter().find(|c| c.key() == key)
    }

    /// Takes the cell recorded at `p` out of the matrix (and its file), so the next visit of
    /// `p` makes a cell of its own.
    fn take_cell(&mut self, p: &Point) -> Result<Option<Cell>, SweepError> {
        let Some(key) = self.key_of(p) else {
            return Ok(None);
        };
        let Some(i) = self.out.cells.iter().position(|c| c.key() == key) else {
            return Ok(None);
        };
        let cell = self.out.cells.remove(i);
        self.out.done.remove(&key);
        self.rewrite()?;
        Ok(Some(cell))
    }

    /// Puts `cell` back into the matrix (the file is rewritten by the caller).
    fn put_cell(&mut self, cell: Option<Cell>) {
        if let Some(cell) = cell {
            self.out.done.insert(cell.key());
            self.out.cells.push(cell);
        }
    }

    /// Re-capping is not valid: the cells and blocks of `params` measured so far are dropped
    /// but `kept` (each measured on a launch that started at its point), and every other point
    /// is measured from the start, a fresh launch each.
    pub(super) fn relaunch_keeping(
        &mut self,
        params: &BTreeMap<String, String>,
        kept: Vec<Cell>,
    ) -> Result<(), SweepError> {
        self.axes.mode = SweepMode::Relaunch;
        self.drop_combination(params, kept)
    }

    /// Drops the cells and blocks of `params` measured so far but `kept`, and rewrites the
    /// file.
    fn drop_combination(
        &mut self,
        params: &BTreeMap<String, String>,
        kept: Vec<Cell>,
    ) -> Result<(), SweepError> {
        self.blocks.open = None;
        self.blocks.closed.retain(|b| &b.params != params);
        let blocks = self.blocks.closed.clone();
        self.out.cells.retain(|c| &c.params != params);
        self.out.done.retain(|k| &k.params != params);
        for cell in kept {
            self.put_cell(Some(cell));
        }
        self.update_header(|h| h.blocks = blocks)?;
        self.rewrite()
    }
}
