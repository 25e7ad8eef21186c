//! Checks of a matrix's measurements that a reader should see before trusting it: cells measured
//! while other processes took the job's CPUs, and CPU curves that fall with more CPU.
//!
//! More CPU never makes a training job slower on its own (a job that cannot use a core leaves
//! it idle), so a measured rate clearly below the rate at a lower CPU level at the same memory
//! level means one of the two was measured on a busy machine, or the job sizes itself from the
//! CPUs it saw at start.

use super::{Cell, CellKey, CellSource, Matrix};
use std::collections::BTreeMap;
use std::fmt;

/// How far below the lower level's rate a higher level's must be, beyond both intervals, to
/// count as falling.
pub const FALL_SLACK: f64 = 0.05;

use crate::units::GIB;

/// One measured point of a curve.
#[derive(Debug, Clone, PartialEq)]
pub struct CurvePoint {
    pub cpu: f64,
    pub samples_per_s: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
}

/// A higher CPU level measured clearly slower than a lower one at the same memory level and
/// parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct FallingCurve {
    pub memory_bytes: u64,
    pub params: BTreeMap<String, String>,
    pub lower: CurvePoint,
    pub higher: CurvePoint,
}

impl fmt::Display for FallingCurve {
    /// `at 0.05 GiB: 2 CPUs (12.2 samples/s) < 1 CPU (51.2): the curve falls with more CPU;
    /// re-measure on a quiet machine`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at {} GiB",
            trim(format!("{:.2}", self.memory_bytes as f64 / GIB))
        )?;
        for (k, v) in &self.params {
            write!(f, ", {k}={v}")?;
        }
        write!(
            f,
            ": {} ({:.1} samples/s) < {} ({:.1}): the curve falls with more CPU; re-measure on a \
             quiet machine",
            cpus(self.higher.cpu),
            self.higher.samples_per_s,
            cpus(self.lower.cpu),
            self.lower.samples_per_s
        )
    }
}

/// What the checks found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    /// One per higher CPU level that falls below a lower one (against the lower level it
    /// falls furthest below), by memory level, parameters and CPU.
    pub falling: Vec<FallingCurve>,
    /// Cells whose estimate still includes windows disturbed by other processes.
    pub disturbed: Vec<CellKey>,
}

impl Findings {
    pub fn is_empty(&self) -> bool {
        self.falling.is_empty() && self.disturbed.is_empty()
    }

    /// The falling curves as sentences, one per finding.
    pub fn messages(&self) -> Vec<String> {
        self.falling.iter().map(ToString::to_string).collect()
    }
}

/// Whether a cell was measured while other processes took CPU from the job and the
/// re-measurements ran out.
pub fn is_disturbed(cell: &Cell) -> bool {
    cell.source == CellSource::Measured && cell.interference.as_ref().is_some_and(|i| i.disturbed)
}

/// Whether `higher` (at more CPU) is below `lower` by more than both intervals allow and by
/// more than [`FALL_SLACK`].
pub fn falls(lower: &CurvePoint, higher: &CurvePoint) -> bool {
    higher.ci95_high < lower.ci95_low
        && higher.samples_per_s < lower.samples_per_s * (1.0 - FALL_SLACK)
}

/// Runs the checks on every measured cell of `m`.
pub fn check(m: &Matrix) -> Findings {
    // Measured cells by curve (memory level and parameters), a later cell replacing an
    // earlier one of the same point, as the matrix file reads.
    let mut curves: BTreeMap<(u64, BTreeMap<String, String>), BTreeMap<u64, CurvePoint>> =
        BTreeMap::new();
    for c in &m.cells {
        let Some(t) = c
            .throughput
            .as_ref()
            .filter(|_| c.source == CellSource::Measured)
        else {
            continue;
        };
        if ![t.samples_per_s, t.ci95_low, t.ci95_high, c.cpu]
            .iter()
            .all(|v| v.is_finite())
        {
            continue;
        }
        let key = c.key();
        curves
            .entry((c.memory_bytes, c.params.clone()))
            .or_default()
            .insert(
                key.cpu_milli,
                CurvePoint {
                    cpu: c.cpu,
                    samples_per_s: t.samples_per_s,
                    ci95_low: t.ci95_low,
                    ci95_high: t.ci95_high,
                },
            );
    }
    let mut falling = Vec::new();
    for ((memory_bytes, params), points) in curves {
        let points: Vec<&CurvePoint> = points.values().collect();
        for (j, higher) in points.iter().enumerate() {
            let worst = points[..j]
                .iter()
                .filter(|lower| falls(lower, higher))
                .max_by(|a, b| a.ci95_low.total_cmp(&b.ci95_low));
            if let Some(lower) = worst {
                falling.push(FallingCurve {
                    memory_bytes,
                    params: params.clone(),
                    lower: (*lower).clone(),
                    higher: (*higher).clone(),
                });
            }
        }
    }
    let mut disturbed: Vec<CellKey> = m
        .cells
        .iter()
        .filter(|c| is_disturbed(c))
        .map(Cell::key)
        .collect();
    disturbed.sort();
    disturbed.dedup();
    Findings { falling, disturbed }
}

/// `1 CPU`, `2 CPUs`, `0.5 CPUs`.
fn cpus(v: f64) -> String {
    if v == 1.0 {
        "1 CPU".into()
    } else {
        format!("{} CPUs", trim(format!("{v:.3}")))
    }
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::fixtures::{cell, header};
    use crate::matrix::{Interference, Throughput};

    fn measured(cpu: f64, mem: u64, rate: f64, half: f64) -> Cell {
        let mut c = cell(cpu);
        c.memory_bytes = mem;
        c.source = CellSource::Measured;
        c.note = None;
        c.throughput = Some(Throughput {
            samples_per_s: rate,
            ci95_low: rate - half,
            ci95_high: rate + half,
            windows: 5,
            measured_s: 10.0,
            launches: Vec::new(),
        });
        c
    }

    fn matrix(cells: Vec<Cell>) -> Matrix {
        Matrix {
            header: header("j"),
            cells,
        }
    }

    const MEM: u64 = 53_687_091; // 0.05 GiB

    #[test]
    fn a_curve_that_falls_with_more_cpu_is_found() {
        let f = check(&matrix(vec![
            measured(2.0, MEM, 12.2, 0.5),
            measured(1.0, MEM, 51.2, 1.0),
            measured(0.5, MEM, 30.0, 1.0),
        ]));
        assert_eq!(
            f.messages(),
            vec![
                "at 0.05 GiB: 2 CPUs (12.2 samples/s) < 1 CPU (51.2): the curve falls with more \
                 CPU; re-measure on a quiet machine"
            ],
            "against the lower level it falls furthest below"
        );
        assert_eq!(f.falling[0].lower.cpu, 1.0);
        assert!(f.disturbed.is_empty());
    }

    #[test]
    fn rising_flat_and_overlapping_curves_are_not_findings() {
        // Rising; flat within noise; lower beyond the intervals but by less than 5%; lower by
        // more than 5% but within the intervals.
        for (a, b) in [
            ((10.0, 0.5), (20.0, 0.5)),
            ((100.0, 0.5), (99.8, 0.5)),
            ((100.0, 0.1), (96.0, 0.1)),
            ((100.0, 5.0), (90.0, 6.0)),
        ] {
            let f = check(&matrix(vec![
                measured(1.0, MEM, a.0, a.1),
                measured(2.0, MEM, b.0, b.1),
            ]));
            assert!(f.is_empty(), "{a:?} then {b:?}: {f:?}");
        }
        // Just beyond both: found.
        let f = check(&matrix(vec![
            measured(1.0, MEM, 100.0, 2.0),
            measured(2.0, MEM, 94.0, 2.0),
        ]));
        assert!(!f.is_empty());
    }

    #[test]
    fn only_measured_cells_of_the_same_curve_are_compared() {
        let mut modelled = measured(1.0, MEM, 100.0, 1.0);
        modelled.source = CellSource::Modelled;
        let mut batch = measured(1.0, MEM, 100.0, 1.0);
        batch.params.insert("batch".into(), "16".into());
        let mut batch_fall = measured(2.0, MEM, 50.0, 1.0);
        batch_fall.params.insert("batch".into(), "16".into());
        let f = check(&matrix(vec![
            modelled,
            measured(2.0, MEM, 50.0, 1.0),
            // Another memory level.
            measured(4.0, 2 * MEM, 10.0, 1.0),
            batch,
            batch_fall,
        ]));
        assert_eq!(f.falling.len(), 1, "{f:?}");
        assert!(
            f.messages()[0].starts_with("at 0.05 GiB, batch=16: 2 CPUs (50.0 samples/s)"),
            "{:?}",
            f.messages()
        );
    }

    #[test]
    fn disturbed_cells_are_listed() {
        let mut c = measured(2.0, MEM, 50.0, 1.0);
        c.interference = Some(Interference {
            other_cores: 0.8,
            idle_cores: 0.0,
            cpu_pressure_pct: None,
            discarded_windows: 10,
            disturbed: true,
            ..Default::default()
        });
        let mut clean = measured(1.0, MEM, 30.0, 1.0);
        clean.interference = Some(Interference {
            discarded_windows: 2,
            ..Interference::default()
        });
        let f = check(&matrix(vec![c.clone(), clean.clone()]));
        assert_eq!(f.disturbed, vec![c.key()]);
        assert!(is_disturbed(&c) && !is_disturbed(&clean));
        assert!(f.falling.is_empty());
    }
}
