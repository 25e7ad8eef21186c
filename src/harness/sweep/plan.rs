//! The sweep's plan: points, memory levels, where launches get their points from, and which
//! points can share a launch.

use crate::matrix::{Cell, CellKey};
use crate::spec::SweepMode;
use std::collections::{BTreeMap, HashSet, VecDeque};

/// The axes a sweep walks: its CPU levels (chosen by a search where the spec asks for one, and
/// what each search found, one line per parameter combination, for the header), its other
/// parameters, and whether it re-caps a running job or starts one per cell.
pub(crate) struct Axes {
    pub cpu: Vec<f64>,
    pub search: Option<super::cpu_search::CpuSearch>,
    pub search_results: Vec<String>,
    pub params: BTreeMap<String, Vec<String>>,
    pub mode: SweepMode,
    /// The job sizes itself from the CPU level it starts at: no launch re-caps it.
    pub depends_on_cpu: bool,
    /// The spec's `measure.rounds`: blocks a live launch measures.
    pub rounds: u32,
}

impl Axes {
    /// Whether each launch is a block of its own: live re-capping, where one launch walks the
    /// points of a pass.
    pub(super) fn blocks_per_launch(&self) -> bool {
        self.mode == SweepMode::Live && !self.depends_on_cpu
    }

    /// The reference point of `params`: the top CPU level at the top memory level.
    pub(super) fn reference_point(&self, params: &BTreeMap<String, String>) -> Point {
        let cpu = match &self.search {
            Some(s) => s.max,
            None => self.cpu.iter().copied().fold(0.0, f64::max),
        };
        Point {
            cpu,
            mem: 0,
            params: params.clone(),
        }
    }

    /// Blocks a launch measures: `measure.rounds` where it walks in rounds, else 1.
    pub(super) fn rounds_per_launch(&self) -> u32 {
        match self.blocks_per_launch() {
            true => self.rounds.max(1),
            false => 1,
        }
    }

    /// The rounds a launch walks the top memory level in, with the reference that ends each:
    /// only where the launch is re-capped back to it (live).
    pub(super) fn rounds<'a>(&self, reference: &'a Point) -> Option<(&'a Point, u32)> {
        self.blocks_per_launch()
            .then_some((reference, self.rounds_per_launch()))
    }
}

/// A grid point to measure.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Point {
    pub cpu: f64,
    /// Index into the memory levels (0 = largest).
    pub mem: usize,
    pub params: BTreeMap<String, String>,
}

/// Memory levels, largest first; `pct` levels become bytes once the job's resident size is known.
#[derive(Debug, Clone)]
pub(super) enum MemoryLevels {
    Bytes(Vec<u64>),
    PctOfDataset { pct: Vec<f64>, dataset_bytes: u64 },
}

impl MemoryLevels {
    pub fn len(&self) -> usize {
        match self {
            MemoryLevels::Bytes(b) => b.len(),
            MemoryLevels::PctOfDataset { pct, .. } => pct.len(),
        }
    }
    /// Fixes `pct` levels at 1.1 x the job's resident size + 8 MiB + p% of the dataset: headroom
    /// for buffers that grow after warm-up and for kernel memory. `resident_bytes` is 0 when the
    /// job died before telling.
    pub fn resolve(&mut self, resident_bytes: u64) {
        if let MemoryLevels::PctOfDataset { pct, dataset_bytes } = self {
            let base = resident_bytes + resident_bytes / 10 + (8 << 20);
            *self = MemoryLevels::Bytes(
                pct.iter()
                    .map(|p| base + (p / 100.0 * *dataset_bytes as f64) as u64)
                    .collect(),
            );
        }
    }
    pub fn bytes(&self) -> Option<&[u64]> {
        match self {
            MemoryLevels::Bytes(b) => Some(b),
            MemoryLevels::PctOfDataset { .. } => None,
        }
    }
}

/// Whether `next` can be measured on the launch that just measured `last`. Live mode keeps one
/// launch while memory never has to go up (a running job's limit can only be lowered) and, if
/// the command depends on the CPU level, the CPU level stays the same.
pub(super) fn joins_launch(
    last: &Point,
    next: &Point,
    mode: SweepMode,
    depends_on_cpu: bool,
) -> bool {
    mode == SweepMode::Live
        && next.mem >= last.mem
        && next.params == last.params
        && (!depends_on_cpu || next.cpu == last.cpu)
}

/// What the sweep has recorded so far, for the sources of points to look at.
pub(super) struct Recorded<'a> {
    pub cells: &'a [Cell],
    pub memory: &'a MemoryLevels,
    pub done: &'a HashSet<CellKey>,
}

impl Recorded<'_> {
    pub fn is_done(&self, p: &Point) -> bool {
        self.memory.bytes().is_some_and(|b| {
            self.done
                .contains(&CellKey::new(p.cpu, b[p.mem], &p.params))
        })
    }
}

/// Where a sweep's launches get their points: a fixed list (the grid), or a search that proposes
/// CPU levels from the cells recorded so far.
pub(super) trait PointSource {
    /// The next point to measure, or `None` when there is none left. The same point comes back
    /// until it is taken or its cell is recorded.
    fn peek(&mut self, recorded: &Recorded) -> Option<Point>;
    /// The point `peek` returned is being measured.
    fn take(&mut self);
    /// After an OOM kill at `p`: removes and returns the points it rules out (smaller memory at
    /// the same CPU level and parameters).
    fn remove_ruled_out_by_oom(&mut self, p: &Point) -> Vec<Point>;
}

/// A fixed list of points, measured in order, where a point may come back (a live launch walks
/// the top memory level in rounds). A point's first step is skipped where its cell is recorded
/// already (a resumed sweep), unless the walk measures its points again (a later pass); a later
/// visit of a point in the walk never is.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Walk {
    /// Each step, and whether it is skipped where its cell is recorded.
    steps: VecDeque<(Point, bool)>,
}

impl Walk {
    /// A walk of `points` in order; `again`: they are measured whether recorded or not.
    pub fn new(points: impl IntoIterator<Item = Point>, again: bool) -> Walk {
        let mut walk = Walk::default();
        for p in points {
            walk.push(p, again);
        }
        walk
    }

    /// Adds `p` at the end: skipped where recorded if it is its first step and not `again`.
    pub fn push(&mut self, p: Point, again: bool) {
        let first = !self.steps.iter().any(|(q, _)| *q == p);
        self.steps.push_back((p, first && !again));
    }
}

#[cfg(test)]
impl Walk {
    /// The points of every step, in order.
    pub fn steps(&self) -> Vec<Point> {
        self.steps.iter().map(|(p, _)| p.clone()).collect()
    }
}

impl PointSource for Walk {
    fn peek(&mut self, recorded: &Recorded) -> Option<Point> {
        while self
            .steps
            .front()
            .is_some_and(|(p, skip)| *skip && recorded.is_done(p))
        {
            self.steps.pop_front();
        }
        self.steps.front().map(|(p, _)| p.clone())
    }

    fn take(&mut self) {
        self.steps.pop_front();
    }

    fn remove_ruled_out_by_oom(&mut self, p: &Point) -> Vec<Point> {
        let mut implied = Vec::new();
        self.steps.retain(|(q, _)| {
            let ruled_out = q.cpu == p.cpu && q.params == p.params && q.mem > p.mem;
            if ruled_out && !implied.contains(q) {
                implied.push(q.clone());
            }
            !ruled_out
        });
        implied
    }
}

pub(super) fn param_combinations(
    params: &BTreeMap<String, Vec<String>>,
) -> Vec<BTreeMap<String, String>> {
    let mut combos = vec![BTreeMap::new()];
    for (name, values) in params {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(name.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    combos
}

/// Formats a CPU level for templates and names (`0.5`, `2`).
pub(crate) fn cpu_text(cpu: f64) -> String {
    let s = format!("{cpu:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub(super) fn label(p: &Point) -> String {
    let mut s = format!("cpu {}", cpu_text(p.cpu));
    for (k, v) in &p.params {
        s.push_str(&format!(" {k}={v}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(cpu: f64, mem: usize) -> Point {
        Point {
            cpu,
            mem,
            params: BTreeMap::new(),
        }
    }

    #[test]
    fn levels_relative_to_the_dataset_add_headroom_to_the_resident_size() {
        const MIB: u64 = 1 << 20;
        let pct = |resident| {
            let mut m = MemoryLevels::PctOfDataset {
                pct: vec![100.0, 25.0],
                dataset_bytes: 400 * MIB,
            };
            m.resolve(resident);
            m.bytes().expect("resolved").to_vec()
        };
        assert_eq!(pct(100 * MIB), vec![518 * MIB, 218 * MIB]);
        assert_eq!(pct(0), vec![408 * MIB, 108 * MIB], "unknown resident size");
        let mut fixed = MemoryLevels::Bytes(vec![5, 3]);
        fixed.resolve(100 * MIB);
        assert_eq!(fixed.bytes(), Some(&[5, 3][..]));
    }

    /// Splits points, in order, into launches as the sweep does.
    fn launches(points: Vec<Point>, mode: SweepMode, depends_on_cpu: bool) -> usize {
        let joins = points
            .windows(2)
            .filter(|w| joins_launch(&w[0], &w[1], mode, depends_on_cpu))
            .count();
        points.len() - joins
    }

    #[test]
    fn live_launches_follow_memory_downwards_only() {
        let points = vec![pt(2.0, 0), pt(2.0, 1), pt(1.0, 0), pt(1.0, 1)];
        assert_eq!(
            launches(points.clone(), SweepMode::Live, false),
            2,
            "memory must go up between 2.0/1 and 1.0/0"
        );
        let down = vec![pt(2.0, 0), pt(1.0, 0), pt(0.5, 0)];
        assert_eq!(launches(down, SweepMode::Live, false), 1);
        // CPU may also go up on a running job (a search revisits higher levels).
        let up = vec![pt(2.0, 0), pt(0.5, 0), pt(1.0, 0)];
        assert_eq!(launches(up, SweepMode::Live, false), 1);
        assert_eq!(
            launches(vec![pt(2.0, 0), pt(1.0, 0)], SweepMode::Live, true),
            2,
            "a command templating {{workers}} needs a relaunch per CPU level"
        );
        assert_eq!(launches(points, SweepMode::Relaunch, false), 4);
    }

    #[test]
    fn a_walk_skips_recorded_first_steps_keeps_later_visits_and_drops_what_an_oom_rules_out() {
        let memory = MemoryLevels::Bytes(vec![200, 100]);
        let done: HashSet<CellKey> = [CellKey::new(2.0, 200, &BTreeMap::new())].into();
        let recorded = Recorded {
            cells: &[],
            memory: &memory,
            done: &done,
        };
        let steps = [pt(2.0, 0), pt(1.0, 0), pt(2.0, 0), pt(1.0, 1), pt(2.0, 1)];
        let mut walk = Walk::new(steps.clone(), false);
        // The recorded reference is skipped on its first step, not on its visit after 1 CPU.
        assert_eq!(walk.peek(&recorded), Some(pt(1.0, 0)));
        walk.take();
        assert_eq!(walk.peek(&recorded), Some(pt(2.0, 0)));
        walk.take();
        assert_eq!(walk.remove_ruled_out_by_oom(&pt(1.0, 0)), vec![pt(1.0, 1)]);
        assert_eq!(walk.peek(&recorded), Some(pt(2.0, 1)));
        // Measured again, nothing is skipped.
        let mut again = Walk::new(steps, true);
        assert_eq!(again.peek(&recorded), Some(pt(2.0, 0)));
    }

    #[test]
    fn params_expand_to_their_product() {
        let mut p = BTreeMap::new();
        p.insert(
            "batch".to_string(),
            vec!["32".to_string(), "64".to_string()],
        );
        p.insert("lr".to_string(), vec!["0.1".to_string()]);
        let c = param_combinations(&p);
        assert_eq!(c.len(), 2);
        assert_eq!(c[1]["batch"], "64");
        assert_eq!(cpu_text(0.5), "0.5");
        assert_eq!(cpu_text(2.0), "2");
    }
}
