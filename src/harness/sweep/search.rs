//! The sweep's CPU search: measure the levels a [`CpuSearch`] asks for, one at a time, at the
//! top memory level (a running job's CPU cap can go up or down, its memory cap only down), then,
//! when memory is measured, the lower memory levels at the levels it chose, memory level by
//! memory level, so that in live mode one launch does it all. The sweep walks these sources
//! (`super::passes`).

use crate::harness::sweep::cpu_search::{
    CpuSearch, Granularity, KNEE_MAX_POINTS, KNEE_TOLERANCE, Measured, Next, SearchRule, knee,
};
use crate::harness::sweep::plan::{Point, PointSource, Recorded, Walk, cpu_text};
use crate::matrix::{CellSource, cell_model};
use crate::predict::{Library, kind_folder};
use crate::spec::{CpuSearchSpec, SearchRuleSpec};
use std::collections::BTreeMap;
use std::path::Path;

/// The search a spec asks for; `max` defaults to every CPU available here, `min` to one core.
/// The predict search's library folder is read relative to `spec_dir`, its tolerance is
/// `precision` unless the spec sets one.
pub(super) fn configure(
    spec: &CpuSearchSpec,
    gpus: u32,
    available: f64,
    (spec_dir, precision): (&Path, f64),
) -> Result<CpuSearch, String> {
    let max = spec.max.unwrap_or(available);
    let min = spec.min.unwrap_or(1.0_f64.min(max));
    if min > max {
        return Err(format!(
            "sweep.cpu: min = {min} is above max = {max} (max defaults to the {available} CPUs available here)"
        ));
    }
    let mut search = match spec.search {
        SearchRuleSpec::Knee => CpuSearch {
            granularity: spec.step.map_or(Granularity::Auto, Granularity::Every),
            max_points: spec.max_points.unwrap_or(KNEE_MAX_POINTS),
            tolerance: KNEE_TOLERANCE,
            ..CpuSearch::knee(min, max)
        },
        SearchRuleSpec::Synergy => CpuSearch::synergy(min, max, gpus),
        SearchRuleSpec::Predict => predict_search(spec, spec_dir, precision)?,
    };
    if let Some(t) = spec.tolerance {
        search.tolerance = t;
    }
    Ok(search)
}

/// The prediction search over the spec's levels, leaning on the zoo and its library folder
/// (this machine kind's subfolder where it has one), read relative to `spec_dir`.
fn predict_search(
    spec: &CpuSearchSpec,
    spec_dir: &Path,
    precision: f64,
) -> Result<CpuSearch, String> {
    let mut library = Library::zoo();
    if let Some(dir) = &spec.library {
        let kind = crate::machine::this_machine().kind;
        let dir = kind_folder(&spec_dir.join(dir), kind.as_deref());
        (library.add(&dir)).map_err(|e| format!("sweep.cpu.library: {e}"))?;
    }
    let levels = spec.levels.clone().unwrap_or_default();
    if levels.len() < 2 {
        return Err(
            "the predict search needs two CPU levels or more: sweep.cpu as a list, or --cpu".into(),
        );
    }
    Ok(CpuSearch::predict(&levels, library, precision))
}

/// The search's settings, and what it found, for the matrix header.
pub(super) fn describe(search: &CpuSearch, results: &[String]) -> String {
    let rule = match search.rule {
        SearchRule::Knee => "the knee search",
        SearchRule::Synergy => "Synergy's profiler rule",
        SearchRule::Predict => "the prediction search",
    };
    let mut text = format!(
        "CPU levels chosen by {rule} over {}..{} cores (tolerance {})",
        cpu_text(search.min),
        cpu_text(search.max),
        search.tolerance
    );
    if !results.is_empty() {
        text.push_str(": ");
        text.push_str(&results.join("; "));
    }
    text
}

/// Points proposed by the search for one parameter combination, at the top memory level.
pub(super) struct SearchPoints<'a> {
    pub search: &'a CpuSearch,
    pub params: &'a BTreeMap<String, String>,
}

impl SearchPoints<'_> {
    /// Levels recorded at the top memory level for these parameters (resumed ones included);
    /// a failed or infeasible level counts, with no throughput. The prediction search reads
    /// each rate at one host speed, as the cell model will ([`cell_model::absolute_rates`]):
    /// its library is read so, and a level measured in a slow spell would bend the shape.
    pub(super) fn measured(&self, recorded: &Recorded) -> Vec<Measured> {
        let Some(top) = recorded.memory.bytes().and_then(|b| b.first().copied()) else {
            return Vec::new();
        };
        let at_one_speed = match self.search.rule {
            SearchRule::Predict => {
                cell_model::absolute_rates(recorded.cells, cell_model::DEFAULT_READ_AT)
            }
            _ => Vec::new(),
        };
        (recorded.cells.iter().enumerate())
            .filter(|(_, c)| {
                c.memory_bytes == top
                    && &c.params == self.params
                    && c.source != CellSource::Modelled
            })
            .map(|(i, c)| Measured {
                cpu: c.cpu,
                rate: (c.samples_per_s())
                    .and(at_one_speed.get(i).copied().flatten())
                    .or(c.samples_per_s())
                    .unwrap_or(0.0),
            })
            .collect()
    }
}

impl PointSource for SearchPoints<'_> {
    fn peek(&mut self, recorded: &Recorded) -> Option<Point> {
        match self.search.next(&self.measured(recorded)) {
            Next::Measure(cpu) => Some(Point {
                cpu,
                mem: 0,
                params: self.params.clone(),
            }),
            Next::Done => None,
        }
    }

    /// The search proposes the same level until its cell is recorded.
    fn take(&mut self) {}

    /// The search measures only the top memory level: nothing below it to rule out.
    fn remove_ruled_out_by_oom(&mut self, _p: &Point) -> Vec<Point> {
        Vec::new()
    }
}

/// The search's points, then the lower memory levels at the CPU levels it chose (skipping
/// levels where the top memory level was OOM-killed).
pub(super) struct SearchThenLowerMemory<'a> {
    pub search: SearchPoints<'a>,
    pub memory_levels: usize,
    pub lower: Option<Walk>,
}

impl PointSource for SearchThenLowerMemory<'_> {
    fn peek(&mut self, recorded: &Recorded) -> Option<Point> {
        if self.lower.is_none() {
            if let Some(p) = self.search.peek(recorded) {
                return Some(p);
            }
            let mut levels: Vec<Measured> = self.search.measured(recorded);
            levels.retain(|m| !top_was_oom_killed(recorded, m.cpu, self.search.params));
            levels.sort_by(|a, b| b.cpu.total_cmp(&a.cpu));
            let params = self.search.params;
            let points = (1..self.memory_levels).flat_map(|mem| {
                levels.iter().map(move |m| Point {
                    cpu: m.cpu,
                    mem,
                    params: params.clone(),
                })
            });
            self.lower = Some(Walk::new(points, false));
        }
        self.lower.as_mut().and_then(|q| q.peek(recorded))
    }

    fn take(&mut self) {
        if let Some(q) = &mut self.lower {
            q.take();
        }
    }

    fn remove_ruled_out_by_oom(&mut self, p: &Point) -> Vec<Point> {
        self.lower
            .as_mut()
            .map_or_else(Vec::new, |q| q.remove_ruled_out_by_oom(p))
    }
}

pub(super) fn top_was_oom_killed(
    recorded: &Recorded,
    cpu: f64,
    params: &BTreeMap<String, String>,
) -> bool {
    let top = recorded.memory.bytes().map(|b| b[0]);
    recorded.cells.iter().any(|c| {
        Some(c.memory_bytes) == top
            && c.cpu == cpu
            && &c.params == params
            && c.source == CellSource::Infeasible
    })
}

/// What the search for `params` found, in a line for the header.
pub(super) fn search_result(
    search: &CpuSearch,
    params: &BTreeMap<String, String>,
    measured: &[Measured],
) -> String {
    let mut text: String = params.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    text.push_str(&format!("{} levels measured", measured.len()));
    if let Some(k) = knee(measured, search.tolerance) {
        let best = measured.iter().map(|m| m.rate).fold(0.0, f64::max);
        text.push_str(&format!(
            ", knee at {k:.2} cores (reaches {:.0}% of the best, {best:.1} samples/s)",
            (1.0 - search.tolerance) * 100.0
        ));
    }
    text
}
