//! The units the cell model fits: one a window of a visit (a cell measured once on a launch),
//! with the log of the job's rate and the log of the host probe's speed over the same window.
//! A visit whose windows were not recorded is one unit, its rate beside the probe's speed
//! over the visit. On the recorded default sweeps, windows as units held another sweep's
//! estimate in 93% of pairs where visits held it in 87% (docs/findings/cell-model.md).

use crate::matrix::{Cell, CellKey, CellSource};

/// One window (or visit) of a cell, as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// The cell it measured (its index among the cells fitted).
    pub cell: usize,
    /// The launch it was measured on (0 where the file does not say).
    pub launch: u32,
    /// The visit it belongs to, counted within its cell: windows of one visit share what the
    /// host and the job did over it.
    pub visit: usize,
    /// `ln` of the job's samples/s.
    pub log_rate: f64,
    /// `ln` of the probe's speed on the job's CPUs meanwhile, where a probe ran.
    pub log_speed: Option<f64>,
}

/// The measured cells of one parameter combination, with their units: every window of every
/// visit of each, else each launch's rate, else the cell's own rate. A visit that stayed
/// disturbed (other processes took the job's CPUs, as the harness measured) is left out where
/// the cell has undisturbed visits, as its absolute rate leaves it out.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The cells' keys, the reference (most CPU, then most memory) first.
    pub cells: Vec<CellKey>,
    /// Each cell's CPU level, in the same order.
    pub cpus: Vec<f64>,
    /// Each cell's visits (or launches), in the same order.
    pub visits: Vec<usize>,
    pub units: Vec<Unit>,
}

impl Sample {
    /// The measured cells among `cells` with the parameters `params`, and their units.
    pub fn of(cells: &[Cell], params: &std::collections::BTreeMap<String, String>) -> Sample {
        let mut measured: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.source == CellSource::Measured && &c.params == params)
            .filter(|c| c.samples_per_s().is_some_and(|r| r > 0.0))
            .collect();
        measured
            .sort_by(|a, b| (b.cpu.total_cmp(&a.cpu)).then(b.memory_bytes.cmp(&a.memory_bytes)));
        let mut units = Vec::new();
        for (i, cell) in measured.iter().enumerate() {
            units.extend(units_of(cell, i));
        }
        Sample {
            cells: measured.iter().map(|c| c.key()).collect(),
            cpus: measured.iter().map(|c| c.cpu).collect(),
            visits: (measured.iter())
                .map(|c| kept_visits(c).count().max(c.launches().len()))
                .collect(),
            units,
        }
    }

    /// The units of cell `i`.
    pub fn units_of(&self, i: usize) -> impl Iterator<Item = &Unit> {
        self.units.iter().filter(move |u| u.cell == i)
    }
}

/// The visits of `cell` the model reads: the undisturbed ones where there are any.
fn kept_visits(cell: &Cell) -> impl Iterator<Item = &crate::matrix::Visit> {
    let quiet = cell.visits.iter().any(|v| !v.disturbed);
    (cell.visits.iter()).filter(move |v| !(quiet && v.disturbed))
}

fn units_of(cell: &Cell, index: usize) -> Vec<Unit> {
    let positive = |r: f64| (r > 0.0 && r.is_finite()).then(|| r.ln());
    let mut visits: Vec<Unit> = Vec::new();
    for (visit, v) in kept_visits(cell).enumerate() {
        let windows: Vec<Unit> = (v.host.iter())
            .flat_map(|h| h.windows.iter())
            .filter_map(|[rate, speed]| {
                Some(Unit {
                    cell: index,
                    launch: v.launch,
                    visit,
                    log_rate: positive(*rate)?,
                    log_speed: Some(positive(*speed)?),
                })
            })
            .collect();
        if !windows.is_empty() {
            visits.extend(windows);
        } else if let Some(log_rate) = positive(v.samples_per_s) {
            visits.push(Unit {
                cell: index,
                launch: v.launch,
                visit,
                log_rate,
                log_speed: v.host.as_ref().and_then(|h| positive(h.speed)),
            });
        }
    }
    if !visits.is_empty() {
        return visits;
    }
    (cell.launches().iter().enumerate())
        .filter_map(|(i, l)| {
            Some(Unit {
                cell: index,
                launch: i as u32 + 1,
                visit: i,
                log_rate: positive(l.samples_per_s)?,
                log_speed: None,
            })
        })
        .collect()
}
