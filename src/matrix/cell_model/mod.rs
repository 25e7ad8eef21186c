//! The cell model: one statistical model of a sweep's measurements, from which every cell's
//! rate relative to its reference and that rate's interval are read.
//!
//! A unit is one visit: a cell measured once on a launch. Its log rate is modelled as
//!
//! ```text
//! ln rate = cell + launch + slope[cell] · (ln probe speed − ln s*) + noise
//! ```
//!
//! - `cell`: the cell's log rate at the reading speed `s*`, the quantity reported;
//! - `launch`: a launch's shift, shared by every cell it measured (only launches that measured
//!   two cells or more get one: a launch of one cell is noise, as a fresh start is);
//! - `slope`: how the cell's rate follows the host's speed, as the probe on the job's CPUs
//!   reads it (1 for a quota-bound cell, 0 for one the accelerator bounds); fitted per cell of
//!   the top memory level where it has probe readings enough. A cell below the top memory
//!   level gets none: storage bounds it, and the probe beside it reads the CPU time the job
//!   leaves idle (on the recorded corpus a slope there moved its rate between sweeps twice
//!   as much as none, docs/findings/cell-model.md);
//! - `s*`: the probe speed every rate is read at ([`ReadAt`]);
//! - `noise`: a variance within visits and a shift each visit's windows share, each its own
//!   for every cell, borrowing from the whole sweep's where the cell has few visits (`fit.rs`
//!   splits them, and says why no unit is downweighted).
//!
//! A cell's relative rate is `exp(cell − reference)`. Its interval is where another sweep's
//! estimate lands: `± t(df) · sqrt(2 · var)`, `var` the contrast's variance from the fit
//! (every part of the noise) and `df` Satterthwaite's between the parts'. docs/SWEEP.md,
//! "How a cell's interval is made", names each term.

pub mod corpus;
mod fit;
mod kind_speed;
mod precision;
mod units;

pub use kind_speed::{KindSpeedError, KindSpeeds, sweep_id};
pub use precision::{Precision, Wider};
pub use units::{Sample, Unit};

use super::{Cell, CellKey, CellSource, RelativeRate};
use crate::stats::t_975;
use std::collections::BTreeMap;

/// The relative half-width a sweep measures its cells to unless told otherwise.
pub const DEFAULT_PRECISION: f64 = 0.05;

/// Visits of one cell the fit tells apart (more share the last's group).
const MAX_VISITS_A_CELL: usize = 1 << 16;

/// Cells need this many units with a probe reading for a slope of their own.
const UNITS_FOR_A_SLOPE: usize = 3;

/// The probe speed a sweep's rates are read at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReadAt {
    /// A fixed probe speed (the probe's work per second), the same for every sweep of a
    /// machine kind.
    Speed(f64),
    /// This quantile of the sweep's own probe readings.
    Quantile(f64),
}

/// The default reading: the upper quartile of the sweep's probe readings, the host's speed
/// outside its slow spells.
pub const DEFAULT_READ_AT: ReadAt = ReadAt::Quantile(0.75);

/// A cell's fitted rate relative to its reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// `ln` of the relative rate.
    pub log_rate: f64,
    /// Half-width, in log space, of the interval where another sweep's estimate lands.
    pub log_half_width: f64,
    /// The fit's degrees of freedom.
    pub degrees_of_freedom: usize,
    /// Visits the cell rests on.
    pub visits: usize,
    /// Units (windows) the cell rests on.
    pub units: usize,
    /// The slope of its rate on the probe's log speed, where it was fitted.
    pub slope: Option<f64>,
}

impl Reading {
    /// The relative half-width of the interval, as the matrix gives it (`RelativeRate::half_width`):
    /// `(high − low) / 2 / rate`, `sinh(h)` of the log half-width `h`.
    pub fn half_width(&self) -> f64 {
        self.log_half_width.sinh()
    }

    fn to_relative(self) -> RelativeRate {
        RelativeRate {
            host_slope: self.slope,
            ..RelativeRate::unadjusted(
                self.log_rate.exp(),
                [
                    (self.log_rate - self.log_half_width).exp(),
                    (self.log_rate + self.log_half_width).exp(),
                ],
                self.visits as u32,
                0,
            )
        }
    }
}

/// The model fitted to one parameter combination's measured cells.
#[derive(Debug, Clone)]
pub struct FittedSweep {
    sample: Sample,
    fitted: Option<fit::Fitted>,
    /// The launches with a shift of their own, in their columns' order after the cells'.
    launches: Vec<u32>,
    /// Each sloped cell and its slope's column.
    slope_columns: Vec<(usize, usize)>,
    read_at: Option<f64>,
}

impl FittedSweep {
    /// Fits the model to `sample`, reading rates at `read_at`.
    pub fn fit(sample: Sample, read_at: ReadAt) -> FittedSweep {
        let read_at = reading_speed(&sample, read_at);
        let launches = shared_launches(&sample);
        let sloped = sloped_cells(&sample);
        let n_cells = sample.cells.len();
        let columns = n_cells + launches.len() + sloped.len();
        let slope_columns: Vec<(usize, usize)> = (sloped.iter().enumerate())
            .map(|(i, cell)| (*cell, n_cells + launches.len() + i))
            .collect();
        let rows: Vec<Vec<f64>> = (sample.units.iter())
            .map(|u| {
                let mut row = vec![0.0; columns];
                row[u.cell] = 1.0;
                if let Some(j) = launches.iter().position(|l| *l == u.launch) {
                    row[n_cells + j] = 1.0;
                }
                if let (Some(x), Some(at)) = (u.log_speed, read_at)
                    && let Some((_, j)) = slope_columns.iter().find(|(c, _)| *c == u.cell)
                {
                    row[*j] = x - at;
                }
                row
            })
            .collect();
        let y: Vec<f64> = sample.units.iter().map(|u| u.log_rate).collect();
        let groups: Vec<usize> = (sample.units.iter())
            .map(|u| u.cell * MAX_VISITS_A_CELL + u.visit.min(MAX_VISITS_A_CELL - 1))
            .collect();
        let classes: Vec<usize> = sample.units.iter().map(|u| u.cell).collect();
        let fitted = fit::fit(&rows, &y, &groups, &classes);
        FittedSweep {
            sample,
            fitted,
            launches,
            slope_columns,
            read_at,
        }
    }

    /// The probe speed the rates are read at, where a probe ran.
    pub fn read_at(&self) -> Option<f64> {
        self.read_at.map(f64::exp)
    }

    /// The cells fitted, the reference first.
    pub fn cells(&self) -> &[CellKey] {
        &self.sample.cells
    }

    /// Cell `i`'s rate relative to the reference (cell 0), with its interval. `None` where the
    /// fit failed, or left no degree of freedom for an interval; the reference reads 1 with no
    /// width.
    pub fn relative(&self, i: usize) -> Option<Reading> {
        let fitted = self.fitted.as_ref()?;
        let units = self.sample.units_of(i).count();
        let visits = self.sample.visits[i];
        if i == 0 {
            return Some(Reading {
                log_rate: 0.0,
                log_half_width: 0.0,
                degrees_of_freedom: fitted.degrees_of_freedom(),
                visits,
                units,
                slope: self.slope_of(0),
            });
        }
        let mut a = vec![0.0; self.columns()];
        a[i] = 1.0;
        a[0] = -1.0;
        let (variance, df) = fitted.variance(&a);
        let half = t_975(df) * (2.0 * variance).sqrt();
        let estimate = fitted.estimate(&a);
        if !(half.is_finite() && estimate.is_finite()) {
            return None;
        }
        Some(Reading {
            log_rate: estimate,
            log_half_width: half,
            degrees_of_freedom: df,
            visits,
            units,
            slope: self.slope_of(i),
        })
    }

    /// The widest relative half-width among the cells other than the reference, and which
    /// cell it is.
    pub fn widest(&self) -> Option<(usize, f64)> {
        (1..self.sample.cells.len())
            .filter_map(|i| Some((i, self.relative(i)?.half_width())))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Cell `i`'s samples/s at the reading speed, its launches' shifts averaged over its
    /// visits; `None` where the fit failed or the cell has no visit.
    pub fn absolute(&self, i: usize) -> Option<f64> {
        let fitted = self.fitted.as_ref()?;
        let units: Vec<&Unit> = self.sample.units_of(i).collect();
        if units.is_empty() {
            return None;
        }
        let n_cells = self.sample.cells.len();
        let mut a = vec![0.0; self.columns()];
        a[i] = 1.0;
        for u in &units {
            if let Some(j) = self.launches.iter().position(|l| *l == u.launch) {
                a[n_cells + j] += 1.0 / units.len() as f64;
            }
        }
        Some(fitted.estimate(&a).exp())
    }

    fn columns(&self) -> usize {
        self.sample.cells.len() + self.launches.len() + self.slope_columns.len()
    }

    fn slope_of(&self, i: usize) -> Option<f64> {
        let (_, j) = self.slope_columns.iter().find(|(c, _)| *c == i)?;
        Some(self.fitted.as_ref()?.coefficient(*j))
    }
}

/// Every cell's relative rate, in `cells`' order, each parameter combination fitted on its
/// own: measured cells from the model, modelled cells from the measured cell of their CPU
/// level with the most memory, scaled by the cache model's ratio; `None` for failed cells and
/// where nothing was measured.
pub fn relative_rates(cells: &[Cell], read_at: ReadAt) -> Vec<Option<RelativeRate>> {
    let mut out: Vec<Option<RelativeRate>> = vec![None; cells.len()];
    for params in combinations(cells) {
        let fitted = FittedSweep::fit(Sample::of(cells, params), read_at);
        for (i, key) in fitted.cells().iter().enumerate() {
            let Some(reading) = fitted.relative(i) else {
                continue;
            };
            if let Some(at) = cells.iter().position(|c| &c.key() == key) {
                out[at] = Some(reading.to_relative());
            }
        }
    }
    for (i, cell) in cells.iter().enumerate() {
        if cell.source == CellSource::Modelled {
            out[i] = super::relative::modelled_relative(cells, &out, cell);
        }
    }
    out
}

/// Every measured cell's samples/s at the reading speed (`FittedSweep::absolute`), in
/// `cells`' order; `None` for the rest, and where no probe read the host's speed.
pub fn absolute_rates(cells: &[Cell], read_at: ReadAt) -> Vec<Option<f64>> {
    let mut out = vec![None; cells.len()];
    for params in combinations(cells) {
        let fitted = FittedSweep::fit(Sample::of(cells, params), read_at);
        if fitted.read_at().is_none() {
            continue;
        }
        for (i, key) in fitted.cells().iter().enumerate() {
            if let Some(at) = cells.iter().position(|c| &c.key() == key) {
                out[at] = fitted.absolute(i);
            }
        }
    }
    out
}

/// The parameter combinations of `cells`, in the order they first appear.
fn combinations(cells: &[Cell]) -> Vec<&BTreeMap<String, String>> {
    let mut seen: Vec<&BTreeMap<String, String>> = Vec::new();
    for c in cells {
        if !seen.contains(&&c.params) {
            seen.push(&c.params);
        }
    }
    seen
}

/// One line on the measured cells' relative rates other than the references: their median
/// and widest half-width and the visits behind them; `None` without any.
pub fn describe(cells: &[Cell]) -> Option<String> {
    let rated: Vec<&RelativeRate> = (cells.iter())
        .filter(|c| c.source == CellSource::Measured)
        .filter_map(|c| c.relative.as_ref())
        .filter(|r| r.ci95_high > r.ci95_low)
        .collect();
    if rated.is_empty() {
        return None;
    }
    let widths: Vec<f64> = rated.iter().map(|r| r.half_width()).collect();
    Some(format!(
        "relative rates: {} cell(s) at ±{:.1}% median (±{:.1}% at most), {} visit(s) in all",
        rated.len(),
        100.0 * crate::stats::median(&widths),
        100.0 * widths.iter().copied().fold(0.0, f64::max),
        rated.iter().map(|r| r.blocks).sum::<u32>()
    ))
}

/// How a matrix's cells are read: at the speed its header records, else (files written before
/// the cell model) at its own upper quartile.
pub fn read_at_of(header: &super::MatrixHeader) -> ReadAt {
    header
        .read_at_probe_speed
        .map_or(DEFAULT_READ_AT, ReadAt::Speed)
}

/// The probe speed `read_at` stands for among the first parameter combination of `cells`;
/// `None` where no probe ran.
pub fn speed_read_at(cells: &[Cell], read_at: ReadAt) -> Option<f64> {
    let params = &cells.first()?.params;
    reading_speed(&Sample::of(cells, params), read_at).map(f64::exp)
}

/// The reading speed's log, where some unit has a probe reading.
fn reading_speed(sample: &Sample, read_at: ReadAt) -> Option<f64> {
    let speeds: Vec<f64> = sample.units.iter().filter_map(|u| u.log_speed).collect();
    if speeds.is_empty() {
        return None;
    }
    match read_at {
        ReadAt::Speed(s) if s > 0.0 && s.is_finite() => Some(s.ln()),
        ReadAt::Speed(_) => None,
        ReadAt::Quantile(q) => quantile(speeds, q),
    }
}

/// The value at `q` of `values` sorted, the nearest rank to `q · (n − 1)`; `None` for none.
fn quantile(mut values: Vec<f64>, q: f64) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let at = (q.clamp(0.0, 1.0) * values.len().checked_sub(1)? as f64).round() as usize;
    values.get(at).copied()
}

/// Launches that measured two cells or more: each gets a shift of its own.
fn shared_launches(sample: &Sample) -> Vec<u32> {
    let mut cells_of: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for u in &sample.units {
        let cells = cells_of.entry(u.launch).or_default();
        if !cells.contains(&u.cell) {
            cells.push(u.cell);
        }
    }
    (cells_of.into_iter())
        .filter(|(_, cells)| cells.len() >= 2)
        .map(|(l, _)| l)
        .collect()
}

/// Cells of the top memory level with probe readings enough, and spread enough, for a slope
/// of their own.
fn sloped_cells(sample: &Sample) -> Vec<usize> {
    let top = sample
        .cells
        .iter()
        .map(|k| k.memory_bytes)
        .max()
        .unwrap_or(0);
    (0..sample.cells.len())
        .filter(|&i| sample.cells[i].memory_bytes == top)
        .filter(|&i| {
            let xs: Vec<f64> = sample.units_of(i).filter_map(|u| u.log_speed).collect();
            let (_, sd) = crate::stats::mean_sd(&xs);
            xs.len() >= UNITS_FOR_A_SLOPE && sd > 1e-6
        })
        .collect()
}

#[cfg(test)]
mod tests;
