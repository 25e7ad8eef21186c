//! The sweep's plan: grid points, memory levels, and how points are grouped into launches.

use crate::spec::SweepMode;
use std::collections::BTreeMap;

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
    pub fn resolve(&mut self, resident_bytes: u64) {
        if let MemoryLevels::PctOfDataset { pct, dataset_bytes } = self {
            *self = MemoryLevels::Bytes(
                pct.iter()
                    .map(|p| resident_bytes + (p / 100.0 * *dataset_bytes as f64) as u64)
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

/// Splits the points (CPU descending, memory descending) into launches. Live mode keeps one
/// launch while memory never has to go up and, if the command depends on the CPU level, the
/// CPU level stays the same.
pub(super) fn group_points(
    points: Vec<Point>,
    mode: SweepMode,
    depends_on_cpu: bool,
) -> Vec<Vec<Point>> {
    let mut groups: Vec<Vec<Point>> = Vec::new();
    for p in points {
        let joins = mode == SweepMode::Live
            && groups
                .last()
                .and_then(|g| g.last())
                .is_some_and(|last: &Point| {
                    p.mem >= last.mem && (!depends_on_cpu || p.cpu == last.cpu)
                });
        if joins {
            groups.last_mut().expect("non-empty").push(p);
        } else {
            groups.push(vec![p]);
        }
    }
    groups
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
pub(super) fn cpu_text(cpu: f64) -> String {
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
    fn live_groups_follow_memory_downwards_only() {
        let points = vec![pt(2.0, 0), pt(2.0, 1), pt(1.0, 0), pt(1.0, 1)];
        let g = group_points(points.clone(), SweepMode::Live, false);
        assert_eq!(g.len(), 2, "memory must go up between 2.0/1 and 1.0/0");
        let g = group_points(
            vec![pt(2.0, 0), pt(1.0, 0), pt(0.5, 0)],
            SweepMode::Live,
            false,
        );
        assert_eq!(g.len(), 1);
        let g = group_points(vec![pt(2.0, 0), pt(1.0, 0)], SweepMode::Live, true);
        assert_eq!(
            g.len(),
            2,
            "a command templating {{workers}} needs a relaunch per CPU level"
        );
        assert_eq!(group_points(points, SweepMode::Relaunch, false).len(), 4);
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
