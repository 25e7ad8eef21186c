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
use super::live_check::{LiveCheckState, check_point, check_points, describe};
use super::reread;
use super::search::{SearchPoints, SearchThenLowerMemory, search_result, top_was_oom_killed};
use super::{Sweep, SweepError};
use crate::harness::sweep::cpu_search::CpuSearch;
use crate::harness::sweep::plan::param_combinations;
use crate::harness::sweep::plan::{MemoryLevels, Point, PointSource, label};
use crate::matrix::doubt::in_doubt;
use crate::matrix::relative::RelativeRate;
use crate::matrix::{Cell, CellSource, DEFAULT_EPS, SweepBlock, relative_rates};
use crate::matrix::{describe_host, describe_relative};
use crate::spec::MemoryAxis;
use crate::spec::SweepMode;
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

/// The measured points of `params` whose relative rate (from `blocks` and `cells`) is in
/// doubt against the best-case demand's threshold at the default eps ([`in_doubt`]), each with a few words on why.
fn demand_in_doubt(
    levels: &MemoryLevels,
    blocks: &[SweepBlock],
    cells: &[Cell],
    params: &BTreeMap<String, String>,
) -> Vec<(Point, String)> {
    let Some(levels) = levels.bytes() else {
        return Vec::new();
    };
    let relative = relative_rates(blocks, cells);
    let ours: Vec<(&Cell, Option<&RelativeRate>)> = (cells.iter().zip(&relative))
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

/// The measured points of `params` among `cells`, to measure again.
fn points_to_launch_again(
    levels: &MemoryLevels,
    cells: &[Cell],
    params: &BTreeMap<String, String>,
) -> Vec<Point> {
    let Some(levels) = levels.bytes() else {
        return Vec::new();
    };
    cells
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

impl Sweep<'_> {
    /// Measures every parameter combination at `cpu_levels` (or where the search goes), fills
    /// the memory axis in, and holds the spreads between launches.
    pub(super) fn run_combinations(&mut self, cpu_levels: &[f64]) -> Result<(), SweepError> {
        let spec = &self.opts.spec.spec;
        let memory_axis = self.opts.memory_axis.unwrap_or(spec.sweep.memory);
        if self.step.is_some() && memory_axis == MemoryAxis::Measure {
            return Err(SweepError::Plan(
                "a Slurm step has one memory limit, Slurm's: it measures the top memory level \
                 and models the rest; --memory measure needs the profiler's own caps (run it \
                 locally)"
                    .into(),
            ));
        }
        let combos = param_combinations(&spec.sweep.params);
        let n_mem = self.mem.levels.len();
        match &self.axes.search {
            Some(s) => {
                let at_most = combos.len() * s.at_most() * n_mem;
                self.observer.planned_at_most(at_most, self.out.cells.len());
            }
            None => {
                let total = combos.len() * cpu_levels.len() * n_mem;
                self.observer.planned(total, self.out.done.len());
            }
        }
        if n_mem > 1 {
            // Also when every cell is measured: the header then holds what `profiler validate`
            // needs to compare the cache models with the measurement.
            self.mem.prepare_cache_model(self.observer);
        }
        for (i, params) in combos.iter().enumerate() {
            let remaining_combos = combos.len() - i - 1;
            let levels =
                self.measure_combination(params, cpu_levels, memory_axis, remaining_combos)?;
            if (self.mem).calibrate_misses(self.observer, &self.out, params, &levels) {
                self.cache_model_changed()?;
            }
            let root = self.root.as_ref().filter(|_| self.step.is_none());
            let (cancel, cells) = (self.cancel, &self.out.cells);
            let replayed =
                (self
                    .mem
                    .replay_reads(self.observer, root, cancel, cells, params, &levels))
                .map_err(|reread::Interrupted| self.interrupted())?;
            if replayed {
                self.cache_model_changed()?;
            }
            if memory_axis == MemoryAxis::Model {
                for cell in self.mem.modelled(&self.out, params, &levels) {
                    self.record(cell)?;
                }
            }
        }
        if self.axes.search.is_some() {
            self.record_searched_axis()?;
        }
        self.hold_launch_spread()?;
        self.hold_relative_rates()
    }

    /// Measures the points of one parameter combination, pass after pass (the CPU search's, or
    /// the grid of `cpu_levels` at the top memory level, or every level where `memory_axis`
    /// measures them), from the start again where the live check found re-capping not valid.
    /// Returns the CPU levels measured.
    pub(super) fn measure_combination(
        &mut self,
        params: &BTreeMap<String, String>,
        cpu_levels: &[f64],
        memory_axis: MemoryAxis,
        remaining_combos: usize,
    ) -> Result<Vec<f64>, SweepError> {
        loop {
            let levels = match self.axes.search.clone() {
                Some(search) => self.run_search(&search, params, memory_axis, remaining_combos)?,
                None => {
                    let mems: Vec<usize> = match memory_axis {
                        MemoryAxis::Model => vec![0],
                        MemoryAxis::Measure => (0..self.mem.levels.len()).collect(),
                    };
                    let grid: Vec<Point> = (cpu_levels.iter())
                        .flat_map(|&cpu| {
                            mems.iter().map(move |&mem| Point {
                                cpu,
                                mem,
                                params: params.clone(),
                            })
                        })
                        .collect();
                    let mut points = self.blocks.first_walk(&self.axes, grid, params);
                    if memory_axis == MemoryAxis::Model
                        && let Some(p) = self.mem.calibration_point(cpu_levels, params)
                    {
                        points.push(p, false);
                    }
                    self.run_points(&mut points)?;
                    cpu_levels.to_vec()
                }
            };
            if !self.launch_again(params)? {
                return Ok(levels);
            }
        }
    }

    /// Runs the search for one parameter combination, then (with `memory = "measure"`) the lower
    /// memory levels at the CPU levels it chose, on the same launch where the mode allows.
    /// Returns those CPU levels, highest first.
    pub(super) fn run_search(
        &mut self,
        search: &CpuSearch,
        params: &BTreeMap<String, String>,
        memory_axis: MemoryAxis,
        remaining_combos: usize,
    ) -> Result<Vec<f64>, SweepError> {
        let n_mem = self.mem.levels.len();
        let measure_memory = memory_axis == MemoryAxis::Measure && n_mem > 1;
        let search_points = SearchPoints { search, params };
        let measured = if measure_memory {
            let mut source = SearchThenLowerMemory {
                search: search_points,
                memory_levels: n_mem,
                lower: None,
            };
            self.run_points(&mut source)?;
            source.search.measured(&self.recorded())
        } else {
            let mut source = search_points;
            self.run_points(&mut source)?;
            source.measured(&self.recorded())
        };
        let mut levels: Vec<f64> = measured.iter().map(|m| m.cpu).collect();
        levels.sort_by(|a, b| b.total_cmp(a));
        if measure_memory {
            // Below a level OOM-killed at the top memory level, nothing fits either.
            for &cpu in &levels {
                if !top_was_oom_killed(&self.recorded(), cpu, params) {
                    continue;
                }
                for mem in 1..n_mem {
                    let p = Point {
                        cpu,
                        mem,
                        params: params.clone(),
                    };
                    if !self.recorded().is_done(&p) {
                        self.record(self.ruled_out_cell(&p))?;
                    }
                }
            }
        }
        let result = search_result(search, params, &measured);
        self.observer.status(&result);
        self.axes.search_results.push(result);

        // This combination's cells are known now; later ones only bounded.
        let here = self
            .out
            .cells
            .iter()
            .filter(|c| &c.params == params)
            .count();
        let left = (levels.len() * n_mem).saturating_sub(here)
            + remaining_combos * search.at_most() * n_mem;
        let done = self.out.cells.len();
        if remaining_combos == 0 {
            self.observer.planned(done + left, done);
        } else {
            self.observer.planned_at_most(done + left, done);
        }
        Ok(levels)
    }

    /// The matrix's CPU axis becomes the levels measured; the header is rewritten to say so.
    pub(super) fn record_searched_axis(&mut self) -> Result<(), SweepError> {
        let mut axis: Vec<f64> = Vec::new();
        for c in &self.out.cells {
            if !axis.iter().any(|a| (a - c.cpu).abs() < 5e-4) {
                axis.push(c.cpu);
            }
        }
        axis.sort_by(|a, b| b.total_cmp(a));
        self.axes.cpu = axis;
        let fresh = self.make_header();
        self.update_header(|h| {
            h.axes.cpu = fresh.axes.cpu;
            h.provenance = fresh.provenance;
        })?;
        Ok(())
    }

    /// Gives every cell its rate relative to its blocks' reference, says how tight they are, and
    /// rewrites the file.
    pub(super) fn hold_relative_rates(&mut self) -> Result<(), SweepError> {
        if self.blocks.closed.is_empty() {
            return Ok(());
        }
        let relative = relative_rates(&self.blocks.closed, &self.out.cells);
        for (cell, r) in self.out.cells.iter_mut().zip(relative) {
            cell.relative = r;
        }
        if let Some(line) = describe_relative(&self.out.cells, &self.blocks.closed) {
            match self.out.cells.iter().any(|c| c.relative.is_some()) {
                true => self.observer.note(&line),
                false => self.observer.warn(&line),
            }
        }
        if let Some(line) = describe_host(&self.out.cells, &self.blocks.closed) {
            self.observer.note(&line);
        }
        self.rewrite()
    }

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
                    .blocks
                    .left_out(params)
                    .div_ceil(self.axes.rounds_per_launch())
                    .min(MAX_EXTRA_PASSES),
            };
            let checking = self.live_check.owes_a_pass();
            let kind = if pass < launches + owed {
                Pass::Asked
            } else if checking {
                Pass::Check
            } else if launches > 1 && doubt_passes < DOUBT_PASSES {
                match demand_in_doubt(
                    &self.mem.levels,
                    &self.blocks.closed,
                    &self.out.cells,
                    params,
                ) {
                    doubt if doubt.is_empty() => break,
                    doubt => Pass::Doubt(doubt),
                }
            } else {
                break;
            };
            let mut points = points_to_launch_again(&self.mem.levels, &self.out.cells, params);
            if checking {
                // Also where re-capping made the point fail on the first launch.
                points.extend(
                    check_point(&self.mem.levels, &self.out.cells, params)
                        .filter(|p| !points.contains(p)),
                );
            }
            match &kind {
                Pass::Asked => {}
                Pass::Check => {
                    points = check_points(&self.axes, points);
                    if points.len() < 2 {
                        // One CPU level: nothing is re-capped, nothing to check.
                        self.live_check = LiveCheckState::NotNeeded;
                        break;
                    }
                }
                Pass::Doubt(doubt) => {
                    let reference = self.axes.reference_point(params);
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
            let pending = self.live_check.is_pending();
            let mut walk = self.blocks.again_walk(&self.axes, points, pending);
            let next_launch = self.launch_id() + 1;
            let first = walk.peek(&self.recorded());
            self.live_check
                .start(&self.axes, first.as_ref(), next_launch);
            self.run_points(&mut walk)?;
            if self.conclude_live_check(params)? {
                // Re-capping was not valid: every point again, a fresh launch each.
                return Ok(true);
            }
            pass += 1;
        }
        Ok(false)
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

    /// Decides the live check once its fresh launch was measured ([`LiveCheckState::conclude`])
    /// and records it. Where re-capping is not valid, the cells of `params` measured so far are
    /// dropped (they were measured by re-capping) and `true` says to measure them again, now
    /// on a fresh launch each.
    fn conclude_live_check(
        &mut self,
        params: &BTreeMap<String, String>,
    ) -> Result<bool, SweepError> {
        let Some(verdict) = self.live_check.conclude(
            self.observer,
            &self.blocks.closed,
            &self.out.cells,
            &self.mem.levels,
        ) else {
            return Ok(false);
        };
        let line = describe(&verdict.check);
        let (relaunches, is_note) = (verdict.relaunches(), verdict.is_note());
        self.update_header(|h| h.live_check = Some(verdict.check))?;
        match is_note {
            true => self.observer.note(&line),
            false => self.observer.warn(&line),
        }
        match relaunches {
            true => self.relaunch_from_scratch(params),
            false => Ok(false),
        }
    }

    /// Re-capping is not valid: the cells and blocks of `params` measured so far are dropped,
    /// and `true` says to measure them again, a fresh launch each.
    fn relaunch_from_scratch(
        &mut self,
        params: &BTreeMap<String, String>,
    ) -> Result<bool, SweepError> {
        self.axes.mode = SweepMode::Relaunch;
        self.blocks.open = None;
        self.blocks.closed.retain(|b| &b.params != params);
        let blocks = self.blocks.closed.clone();
        self.out.cells.retain(|c| &c.params != params);
        self.out.done.retain(|k| &k.params != params);
        self.update_header(|h| h.blocks = blocks)?;
        self.rewrite()?;
        Ok(true)
    }
}
