//! The sweep's CPU search: measure the levels a [`CpuSearch`] asks for, one at a time, at the
//! top memory level (a running job's CPU cap can go up or down, its memory cap only down), then,
//! when memory is measured, the lower memory levels at the levels it chose, memory level by
//! memory level, so that in live mode one launch does it all.

use super::{Sweep, SweepError};
use crate::harness::sweep::cpu_search::{
    CpuSearch, Granularity, KNEE_MAX_POINTS, KNEE_TOLERANCE, Measured, Next, SearchRule, knee,
};
use crate::harness::sweep::plan::{Point, PointSource, Recorded, Walk, cpu_text};
use crate::matrix::CellSource;
use crate::spec::{CpuSearchSpec, MemoryAxis, SearchRuleSpec};
use std::collections::BTreeMap;

/// The search a spec asks for; `max` defaults to every CPU available here, `min` to one core.
pub(super) fn configure(
    spec: &CpuSearchSpec,
    gpus: u32,
    available: f64,
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
    };
    if let Some(t) = spec.tolerance {
        search.tolerance = t;
    }
    Ok(search)
}

/// The search's settings, and what it found, for the matrix header.
pub(super) fn describe(search: &CpuSearch, results: &[String]) -> String {
    let rule = match search.rule {
        SearchRule::Knee => "the knee search",
        SearchRule::Synergy => "Synergy's profiler rule",
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
struct SearchPoints<'a> {
    search: &'a CpuSearch,
    params: &'a BTreeMap<String, String>,
}

impl SearchPoints<'_> {
    /// Levels recorded at the top memory level for these parameters (resumed ones included);
    /// a failed or infeasible level counts, with no throughput.
    fn measured(&self, recorded: &Recorded) -> Vec<Measured> {
        let Some(top) = recorded.memory.bytes().and_then(|b| b.first().copied()) else {
            return Vec::new();
        };
        recorded
            .cells
            .iter()
            .filter(|c| {
                c.memory_bytes == top
                    && &c.params == self.params
                    && c.source != CellSource::Modelled
            })
            .map(|c| Measured {
                cpu: c.cpu,
                rate: c.samples_per_s().unwrap_or(0.0),
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
struct SearchThenLowerMemory<'a> {
    search: SearchPoints<'a>,
    memory_levels: usize,
    lower: Option<Walk>,
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

fn top_was_oom_killed(recorded: &Recorded, cpu: f64, params: &BTreeMap<String, String>) -> bool {
    let top = recorded.memory.bytes().map(|b| b[0]);
    recorded.cells.iter().any(|c| {
        Some(c.memory_bytes) == top
            && c.cpu == cpu
            && &c.params == params
            && c.source == CellSource::Infeasible
    })
}

impl Sweep<'_> {
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
        let result = self.search_result(search, params, &measured);
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

    fn search_result(
        &self,
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
}
