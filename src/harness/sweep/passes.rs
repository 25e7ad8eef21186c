//! The passes after the first: a scheduler that reads a cell starts the job again, so every
//! cell's interval must say where another sweep lands, and its relative rate needs visits to
//! rest on. After the points of a parameter combination are measured, the sweep measures them
//! again, pass after pass, each pass a block that opens with the reference (one launch for the
//! whole pass where re-capping is valid, as in the first): `measure.launches` passes in all.
//! Then the cell model (`crate::matrix::cell_model`) says which cells are still wider than
//! `measure.precision`, or on a knife's edge of the best-case demand's threshold
//! (`crate::matrix::doubt`): the sweep measures the reference and those cells again, a block a
//! pass (one round where a live launch walks in rounds), until none is or the budget is spent
//! (`measure.launches_budget_s` for every pass after the first; by default, narrowing passes
//! may add half of what the combination took before them). It names the cells it left wider
//! and what more passes would buy. On a grid the first pass opens with the live check
//! ([`Sweep::check_first`]).
//! When the sweep ends, the spread pooled over every point measured on several launches is the
//! floor of every cell's absolute interval ([`hold_pooled_spread`]), and the relative rates are
//! read from the cell model.

use super::launches::{add_visits, first_visit_only, hold_pooled_spread};
use super::live_check::{LiveCheckState, check_point, check_points, describe};
use super::reread;
use super::search::{SearchPoints, SearchThenLowerMemory, search_result, top_was_oom_killed};
use super::{Sweep, SweepError};
use crate::harness::sweep::cpu_search::{CpuSearch, SearchRule};
use crate::harness::sweep::plan::param_combinations;
use crate::harness::sweep::plan::{MemoryLevels, Point, PointSource};
use crate::matrix::cell_model::{self, Precision};
use crate::matrix::{Cell, CellSource, Matrix};
use crate::predict::{self, SETTINGS};
use crate::spec::MemoryAxis;
use crate::spec::SweepMode;
use std::collections::BTreeMap;
use std::time::Instant;

/// Without `measure.launches_budget_s`, the narrowing passes of a combination may take this
/// share of what its passes before them took.
pub const NARROWING_SHARE: f64 = 0.5;

/// What a pass after the first is for.
enum Pass {
    /// One of the `measure.launches` passes asked for (it also makes the live check where that
    /// is still owed).
    Asked,
    /// The live check's fresh launch, beyond the passes asked for: only the check's point and
    /// the reference.
    Check,
    /// The reference and the cells still wider than the precision asked for, or in doubt
    /// against the best-case demand's threshold.
    Narrow(Vec<Point>),
}

/// What follows a combination's passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Then {
    /// The combination is measured.
    Done,
    /// Re-capping was not valid: its cells were dropped, to be measured again from the start,
    /// a fresh launch each.
    StartOver,
}

/// A combination's narrowing passes: when the first began and the seconds they may take, and
/// how long the last pass took over how many visits.
#[derive(Default)]
struct Narrowing {
    began: Option<(Instant, f64)>,
    last_pass: Option<(f64, usize)>,
}

/// The progress line of a pass: its points and its number of `total`.
fn pass_status(points: usize, pass: u32, total: u32) -> String {
    format!(
        "measuring {points} point(s) again (pass {pass} of {total}), the reference first and \
         the rest in a fresh random order"
    )
}

/// The visits the measured cells of `params` hold.
fn visits_of(cells: &[Cell], params: &BTreeMap<String, String>) -> usize {
    (cells.iter())
        .filter(|c| c.source == CellSource::Measured && &c.params == params)
        .map(|c| c.visits.len())
        .sum()
}

/// The wall-clock seconds the measured cells of `params` took per visit: what one more visit
/// costs.
fn seconds_per_visit(cells: &[Cell], params: &BTreeMap<String, String>) -> f64 {
    let ours =
        || (cells.iter()).filter(|c| c.source == CellSource::Measured && &c.params == params);
    let wall: f64 = ours().map(|c| c.wall_s).sum();
    let visits: usize = ours().map(|c| c.visits.len().max(1)).sum();
    wall / visits.max(1) as f64
}

/// The grid point of a measured cell of `params`.
fn point_of(levels: &MemoryLevels, cell: &Cell) -> Option<Point> {
    let levels = levels.bytes()?;
    Some(Point {
        cpu: cell.cpu,
        mem: levels.iter().position(|&b| b == cell.memory_bytes)?,
        params: cell.params.clone(),
    })
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
        self.hold_relative_rates()?;
        // Predicted from the measured cells' relative rates, as the library's were.
        self.record_predicted()
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
            let started = Instant::now();
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
                    self.check_first(params, cpu_levels)?;
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
            if self.launch_again(params, started)? == Then::Done {
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

    /// Where the prediction search chose the levels: those it left unmeasured, predicted from
    /// the measured ones and its library (`crate::predict`), each a cell of its own; the axis
    /// is the search's whole list again.
    fn record_predicted(&mut self) -> Result<(), SweepError> {
        let Some(search) = (self.axes.search.as_ref()).filter(|s| s.rule == SearchRule::Predict)
        else {
            return Ok(());
        };
        let (levels, library) = (search.levels.clone(), search.library.clone());
        let Some(library) = library else {
            return Ok(());
        };
        let matrix = Matrix {
            header: (self.out.header.clone()).unwrap_or_else(|| self.make_header()),
            cells: self.out.cells.clone(),
        };
        let prediction = match predict::predict_matrix(&matrix, &levels, &library, &SETTINGS) {
            Ok(p) => p,
            Err(e) => {
                self.observer.warn(&format!("no level predicted: {e}"));
                return Ok(());
            }
        };
        self.observer.note(&prediction.describe());
        let mut axis = prediction.matrix.header.axes.cpu.clone();
        axis.sort_by(|a, b| b.total_cmp(a));
        self.axes.cpu.clone_from(&axis);
        let provenance = prediction.matrix.header.provenance.clone();
        self.update_header(|h| {
            h.axes.cpu = axis;
            h.provenance = provenance;
        })?;
        let predicted =
            (prediction.matrix.cells.into_iter()).filter(|c| c.source == CellSource::Predicted);
        for cell in predicted {
            self.record(cell)?;
        }
        Ok(())
    }

    /// Gives every cell its rate relative to its combination's reference from the cell model,
    /// read at the machine kind's probe speed, says how tight they are, records the speed in
    /// the header and this sweep's among the kind's, and rewrites the file.
    pub(super) fn hold_relative_rates(&mut self) -> Result<(), SweepError> {
        let read_at = self.kind_reading();
        let relative = cell_model::relative_rates(&self.out.cells, read_at);
        for (cell, r) in self.out.cells.iter_mut().zip(relative) {
            // A predicted cell keeps the predictor's.
            if cell.source != CellSource::Predicted {
                cell.relative = r;
            }
        }
        if let Some(line) = cell_model::describe(&self.out.cells) {
            self.observer.note(&line);
        }
        let spec = &self.opts.spec.spec;
        // One launch asked for makes no narrowing pass: nothing was left for want of time.
        if spec.measure.launches > 1 {
            for params in param_combinations(&spec.sweep.params) {
                let cells = &self.out.cells;
                let left = Precision::of(cells, &params, spec.measure.precision, read_at);
                if let Some(line) = left.describe_left(seconds_per_visit(cells, &params)) {
                    self.observer.warn(&line);
                }
            }
        }
        let speed = cell_model::speed_read_at(&self.out.cells, read_at);
        self.update_header(|h| h.read_at_probe_speed = speed)?;
        if let Some((kind, sweep)) = self.kind()
            && let Err(e) = self.opts.kinds.remember(&kind, &sweep, &self.out.cells)
        {
            self.observer.warn(&format!(
                "{e}: later sweeps of this machine kind cannot read their cells at this one's \
                 speed; set PROFILER_STATE_DIR to a folder the profiler may write"
            ));
        }
        self.rewrite()
    }

    /// The machine kind of the matrix being written, and the sweep's name among its kind's.
    fn kind(&self) -> Option<(String, String)> {
        let header = self.out.header.as_ref()?;
        let kind = header.machine.as_ref()?.kind_key().to_owned();
        Some((
            kind,
            cell_model::sweep_id(&header.job.name, header.created_unix_s),
        ))
    }

    /// The probe speed this sweep reads its cells at: its machine kind's
    /// ([`KindSpeeds::reading`]); its own upper quartile where the kind has none yet, or
    /// where its file cannot be read (with a warning that says which file and why).
    fn kind_reading(&mut self) -> cell_model::ReadAt {
        let Some((kind, sweep)) = self.kind() else {
            return cell_model::DEFAULT_READ_AT;
        };
        match self.opts.kinds.reading(&kind, &sweep) {
            Ok(read_at) => read_at,
            Err(e) => {
                self.observer.warn(&format!(
                    "{e}; reading this sweep's cells at its own probe speeds"
                ));
                cell_model::DEFAULT_READ_AT
            }
        }
    }

    /// Measures the measured points of `params` again, pass after pass, until `measure.launches`
    /// passes were measured and the live check is made; then the cells still wider than
    /// `measure.precision` until none is or the budget is spent. `combination_started` is
    /// when the combination's first pass began.
    fn launch_again(
        &mut self,
        params: &BTreeMap<String, String>,
        combination_started: Instant,
    ) -> Result<Then, SweepError> {
        let started = Instant::now();
        let measure = &self.opts.spec.spec.measure;
        let (launches, precision, budget) = (
            measure.launches,
            measure.precision,
            measure.launches_budget_s,
        );
        let mut pass = 1;
        let mut narrowing = Narrowing::default();
        loop {
            let checking = self.live_check.owes_a_pass();
            let kind = if pass < launches {
                Pass::Asked
            } else if checking {
                Pass::Check
            } else if launches > 1 {
                let allowance = || match budget {
                    Some(b) => b - started.elapsed().as_secs_f64(),
                    None => NARROWING_SHARE * combination_started.elapsed().as_secs_f64(),
                };
                match self.narrowing_pass(params, &mut narrowing, allowance) {
                    Some(points) => Pass::Narrow(points),
                    None => break,
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
                Pass::Narrow(wider) => {
                    let reference = self.axes.reference_point(params);
                    points.retain(|p| *p == reference || wider.contains(p));
                }
            }
            if points.is_empty() {
                break;
            }
            let spent = started.elapsed().as_secs_f64();
            if let Some(budget) = budget
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
            let status = match kind {
                Pass::Narrow(_) => format!(
                    "measuring {} point(s) again to narrow them to ±{:.1}% (pass {})",
                    points.len(),
                    100.0 * precision,
                    pass + 1
                ),
                _ => pass_status(points.len(), pass + 1, launches.max(pass + 1)),
            };
            self.observer.status(&status);
            let (pass_started, visits_before) =
                (Instant::now(), visits_of(&self.out.cells, params));
            let pending = self.live_check.is_pending();
            let narrowing_pass = matches!(kind, Pass::Narrow(_));
            let mut walk = (self.blocks).again_walk(&self.axes, points, pending, narrowing_pass);
            let next_launch = self.launch_id() + 1;
            let first = walk.peek(&self.recorded());
            self.live_check
                .start(&self.axes, first.as_ref(), next_launch);
            self.run_points(&mut walk)?;
            let visits = visits_of(&self.out.cells, params).saturating_sub(visits_before);
            narrowing.last_pass = Some((pass_started.elapsed().as_secs_f64(), visits));
            if self.conclude_live_check(params)? == Then::StartOver {
                return Ok(Then::StartOver);
            }
            pass += 1;
        }
        Ok(Then::Done)
    }

    /// The points of the next narrowing pass of `params`: the cells the cell model finds wider
    /// than the precision asked for, or in doubt against the demand's threshold; `None` where
    /// none is, or where the pass should not end within the narrowing passes' `allowance`
    /// (seconds, asked once, when the first is considered). The cells left wider are named
    /// once all are read (`hold_relative_rates`).
    fn narrowing_pass(
        &mut self,
        params: &BTreeMap<String, String>,
        narrowing: &mut Narrowing,
        allowance: impl FnOnce() -> f64,
    ) -> Option<Vec<Point>> {
        let precision = self.opts.spec.spec.measure.precision;
        let read_at = self.kind_reading();
        let now = Precision::of(&self.out.cells, params, precision, read_at);
        if let Some(widest) = now.widest {
            self.observer.precision(widest, precision);
        }
        if now.reached() {
            if narrowing.began.is_some() {
                self.observer
                    .note(&format!("every cell within ±{:.1}%", 100.0 * precision));
            }
            return None;
        }
        let (since, allowed) = *narrowing
            .began
            .get_or_insert_with(|| (Instant::now(), allowance()));
        let cells = now.to_measure();
        // As long as the last pass took a visit, for each visit of the block: the reference
        // twice and each cell once.
        let expected = (narrowing.last_pass).map_or(0.0, |(secs, visits)| {
            secs * (cells.len() + 2) as f64 / visits.max(1) as f64
        });
        if since.elapsed().as_secs_f64() + expected > allowed {
            return None;
        }
        Some(
            (self.out.cells.iter())
                .filter(|c| cells.contains(&c.key()))
                .filter_map(|c| point_of(&self.mem.levels, c))
                .collect(),
        )
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
    /// and records it: whether re-capping was found not valid, once decided.
    fn decide_live_check(&mut self) -> Result<Option<bool>, SweepError> {
        let Some(verdict) = self.live_check.conclude(
            self.observer,
            &self.blocks.closed,
            &self.out.cells,
            &self.mem.levels,
        ) else {
            return Ok(None);
        };
        let line = describe(&verdict.check);
        let (relaunches, is_note) = (verdict.relaunches(), verdict.is_note());
        self.update_header(|h| h.live_check = Some(verdict.check))?;
        match is_note {
            true => self.observer.note(&line),
            false => self.observer.warn(&line),
        }
        Ok(Some(relaunches))
    }

    /// Decides the live check on a later pass's fresh launch. Where re-capping is not valid,
    /// the cells of `params` measured so far are dropped (they were measured by re-capping),
    /// to be measured again from the start.
    fn conclude_live_check(
        &mut self,
        params: &BTreeMap<String, String>,
    ) -> Result<Then, SweepError> {
        if self.decide_live_check()? != Some(true) {
            return Ok(Then::Done);
        }
        self.relaunch_keeping(params, Vec::new())?;
        Ok(Then::StartOver)
    }

    /// The live check of `params` before any other cell, where it is owed and the grid's
    /// `cpu_levels` have a level below the reference: whether re-capping a running job
    /// measures what a fresh start would is known before any cell is measured by re-capping.
    /// Two launches make it:
    ///
    /// 1. one started at the reference (the top CPU level), re-capped down to the check's
    ///    point (the lowest CPU level at the top memory level) and back up;
    /// 2. a fresh one started at the check's point, re-capped up to the reference.
    ///
    /// `live_check.rs` compares the point's ratio to the reference on both. Where re-capping
    /// is valid, or the check cannot tell yet, every visit stands and the first pass goes on
    /// re-capping. Where it is not, every visit made after a re-cap is dropped: the reference
    /// keeps the first launch's first visit, the point the second launch's, and the sweep
    /// relaunches at every other point. The check costs one launch and two re-capped visits,
    /// not a pass. A sweep stopped before the verdict makes the check afresh on resuming:
    /// which level its launches started at is not on file.
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

    /// Re-capping is not valid: the cells and blocks of `params` measured so far are dropped
    /// but `kept` (each measured on a launch that started at its point), and every other point
    /// is measured from the start, a fresh launch each.
    fn relaunch_keeping(
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
