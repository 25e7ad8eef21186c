//! Where a sweep stands against the precision asked for: the cells whose relative rate is
//! still wider, the cells on a knife's edge of the best-case demand's threshold, and how many
//! more visits each would take.

use super::{FittedSweep, ReadAt, Sample};
use crate::matrix::doubt::in_doubt;
use crate::matrix::{Cell, CellKey, DEFAULT_EPS};
use std::collections::BTreeMap;

/// A cell still wider than the precision asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Wider {
    pub cell: CellKey,
    pub cpu: f64,
    /// Its relative half-width now.
    pub half_width: f64,
    /// Visits it rests on.
    pub visits: usize,
    /// About how many more visits would bring it within the precision: the variance of a
    /// mean falls as one over its visits.
    pub more_visits: usize,
}

/// One parameter combination against the precision asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Precision {
    pub asked: f64,
    /// The widest relative half-width among the cells other than the reference.
    pub widest: Option<f64>,
    pub wider: Vec<Wider>,
    /// Cells whose side of the best-case demand's threshold another sweep could read
    /// otherwise (`crate::matrix::doubt`).
    pub in_doubt: Vec<CellKey>,
}

impl Precision {
    /// The measured cells of `params` among `cells` against `asked`.
    pub fn of(
        cells: &[Cell],
        params: &BTreeMap<String, String>,
        asked: f64,
        read_at: ReadAt,
    ) -> Precision {
        let fitted = FittedSweep::fit(Sample::of(cells, params), read_at);
        let readings: Vec<_> = (0..fitted.cells().len())
            .map(|i| fitted.relative(i))
            .collect();
        let wider = (fitted.cells().iter().zip(&readings).enumerate().skip(1))
            .filter_map(|(i, (key, r))| {
                let r = r.as_ref()?;
                let w = r.half_width();
                (w > asked).then(|| Wider {
                    cell: key.clone(),
                    cpu: fitted.sample.cpus[i],
                    half_width: w,
                    visits: r.visits,
                    more_visits: more_visits(r.visits, w, asked),
                })
            })
            .collect();
        let relative: Vec<_> = readings
            .iter()
            .map(|r| r.map(|r| r.to_relative()))
            .collect();
        let refs: Vec<_> = relative.iter().map(|r| r.as_ref()).collect();
        Precision {
            asked,
            widest: fitted.widest().map(|(_, w)| w),
            wider,
            in_doubt: (in_doubt(&refs, DEFAULT_EPS).into_iter())
                .map(|i| fitted.cells()[i].clone())
                .collect(),
        }
    }

    /// Whether every cell is within the precision and none is in doubt.
    pub fn reached(&self) -> bool {
        self.wider.is_empty() && self.in_doubt.is_empty()
    }

    /// The cells to measure again: the wider ones and those in doubt.
    pub fn to_measure(&self) -> Vec<CellKey> {
        let mut out: Vec<CellKey> = self.wider.iter().map(|w| w.cell.clone()).collect();
        for k in &self.in_doubt {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
        out
    }

    /// One line on the cells left wider: each with its width and what more visits would
    /// bring it within the precision, at `seconds_per_visit`.
    pub fn describe_left(&self, seconds_per_visit: f64) -> Option<String> {
        if self.wider.is_empty() {
            return None;
        }
        let cells: Vec<String> = (self.wider.iter())
            .map(|w| {
                format!(
                    "{} CPU, {:.2}G ±{:.1}% (about {} more visit(s), {:.0} s)",
                    w.cpu,
                    w.cell.memory_bytes as f64 / crate::units::GIB,
                    100.0 * w.half_width,
                    w.more_visits,
                    w.more_visits as f64 * seconds_per_visit
                )
            })
            .collect();
        Some(format!(
            "{} cell(s) left wider than ±{:.1}%: {}; --launches-budget gives the sweep the time",
            self.wider.len(),
            100.0 * self.asked,
            cells.join(", ")
        ))
    }
}

/// Visits more than `visits` that bring a half-width `width` to `asked`, the variance falling
/// as one over the visits.
fn more_visits(visits: usize, width: f64, asked: f64) -> usize {
    let needed = visits as f64 * (width.asinh() / asked.asinh()).powi(2);
    (needed.ceil() as usize).saturating_sub(visits).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_a_width_takes_four_times_the_visits() {
        assert_eq!(more_visits(4, 0.10, 0.05), 12);
        assert_eq!(more_visits(4, 0.051, 0.05), 1);
    }
}
