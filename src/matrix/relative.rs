//! Rates relative to a combination's reference (its top cell, the most CPU and memory), and
//! the blocks a sweep measures in. The relative rates themselves are the cell model's
//! (`super::cell_model`); this file holds their record in the matrix, the blocks recorded in
//! the header, and the raw per-block ratios the live check compares launches by.
//!
//! A measurement (a launch's, or a visit's where a launch measured the cell more than once)
//! belongs to the block whose span holds the middle of its measuring interval. Its ratio is
//! taken against the reference at that moment: interpolated (geometrically) between the
//! opening and closing measurements, so a drift that is linear over the block cancels.

use super::{Cell, CellSource};
use crate::stats::t_975;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A cell's rate over the reference of its own block, averaged over blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelativeRate {
    /// The cell's rate over its parameter combination's reference (top) cell: the geometric
    /// mean over blocks of the per-block ratio. 1 for the reference itself.
    pub rate: f64,
    /// 95% interval for the relative rate another sweep with as many blocks measures.
    pub ci95_low: f64,
    pub ci95_high: f64,
    /// Blocks the relative rate rests on.
    pub blocks: u32,
    /// Blocks that measured this cell but were left out: their reference drifted, or other
    /// processes disturbed them.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub dropped_blocks: u32,
    /// Where the host's speed on the job's CPUs was taken out of the ratios: the cell's slope
    /// of log rate on the probe's log speed (`relative/host.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_slope: Option<f64>,
    /// How the cell's CPU level follows the probe, and so whether its ratios were adjusted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_model: Option<HostModel>,
    /// The relative rate before the host's speed was taken out, where it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_rate: Option<f64>,
    /// The share of the raw ratios' spread between blocks that the host's speed explained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_explained: Option<f64>,
}

impl RelativeRate {
    /// A relative rate read as measured, with no host speed taken out.
    pub fn unadjusted(rate: f64, ci95: [f64; 2], blocks: u32, dropped_blocks: u32) -> Self {
        RelativeRate {
            rate,
            ci95_low: ci95[0],
            ci95_high: ci95[1],
            blocks,
            dropped_blocks,
            host_slope: None,
            host_model: None,
            raw_rate: None,
            host_explained: None,
        }
    }

    /// Relative half-width of the interval, against the rate.
    pub fn half_width(&self) -> f64 {
        (self.ci95_high - self.ci95_low) / 2.0 / self.rate.max(f64::MIN_POSITIVE)
    }

    /// Whether `other`'s rate lies inside this interval.
    pub fn holds(&self, rate: f64) -> bool {
        self.ci95_low <= rate && rate <= self.ci95_high
    }

    fn scaled(&self, factor: f64) -> RelativeRate {
        RelativeRate {
            rate: self.rate * factor,
            ci95_low: self.ci95_low * factor,
            ci95_high: self.ci95_high * factor,
            raw_rate: self.raw_rate.map(|r| r * factor),
            ..self.clone()
        }
    }
}

/// One measurement of the reference point, at a block's opening or closing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockReference {
    pub samples_per_s: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
    /// Windows the interval's Student quantile counts (0 where not recorded).
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub windows: u32,
    /// Unix seconds of the windows the rate covers.
    pub measured_unix_s: [f64; 2],
}

impl BlockReference {
    fn mid(&self) -> f64 {
        0.5 * (self.measured_unix_s[0] + self.measured_unix_s[1])
    }

    /// Variance of the log of the rate: its windows' standard error, squared.
    fn log_variance(&self) -> f64 {
        log_variance(
            self.samples_per_s,
            self.ci95_low,
            self.ci95_high,
            self.windows,
        )
    }

    /// Half-width of the log of the rate's 95% interval.
    fn log_half_width(&self) -> f64 {
        (self.ci95_high - self.ci95_low) / 2.0 / self.samples_per_s
    }
}

/// One block of a sweep, recorded in the matrix header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepBlock {
    /// Blocks are numbered from 0 in the order they were measured.
    pub index: u32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    /// The reference point: the top CPU level at the top memory level.
    pub reference_cpu: f64,
    pub reference_memory_bytes: u64,
    /// Unix seconds from the start of the block's first launch to the end of its last.
    pub span_unix_s: [f64; 2],
    /// The reference measured first in the block; `None` when it failed (the block's cells
    /// then have nothing to be relative to).
    pub opening: Option<BlockReference>,
    /// The reference measured again at the block's end, where the launch could be re-capped
    /// back to it (live sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closing: Option<BlockReference>,
    /// The reference moved between opening and closing beyond what their windows allow: the
    /// block is left out of every relative rate (its cells keep their absolute rates).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drifted: bool,
    /// A measurement of the block stayed disturbed (other processes took the job's CPUs, or
    /// kept the rest of the machine busy, after its windows' re-measurements ran out): the
    /// block is left out of every relative rate, as a drifted one is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disturbed: bool,
}

impl SweepBlock {
    /// How far the reference moved from opening to closing (log ratio), and how far the two
    /// measurements' windows allow it to move (95%); `None` without a closing.
    pub fn drift_beyond_windows(&self) -> Option<(f64, f64)> {
        let (o, c) = (self.opening.as_ref()?, self.closing.as_ref()?);
        if o.samples_per_s <= 0.0 || c.samples_per_s <= 0.0 {
            return None;
        }
        let moved = (c.samples_per_s / o.samples_per_s).ln();
        // The two intervals' half-widths together: each already holds Student's quantile for
        // its few windows.
        let allowed = o.log_half_width().hypot(c.log_half_width());
        Some((moved, allowed))
    }

    /// Whether the block is left out of every relative rate: its reference drifted, or one of
    /// its measurements was disturbed.
    pub fn left_out(&self) -> bool {
        self.drifted || self.disturbed
    }

    /// Whether the reference drifted: it moved beyond what its windows allow plus `slack`.
    pub fn judge_drift(&self, slack: f64) -> bool {
        self.drift_beyond_windows()
            .is_some_and(|(moved, allowed)| moved.abs() > allowed + slack)
    }

    fn holds(&self, params: &BTreeMap<String, String>, t: f64) -> bool {
        &self.params == params && self.span_unix_s[0] <= t && t <= self.span_unix_s[1]
    }

    fn is_reference(&self, cell: &Cell) -> bool {
        cell.key()
            == super::CellKey::new(
                self.reference_cpu,
                self.reference_memory_bytes,
                &self.params,
            )
    }

    /// The reference's rate at unix second `t` and the variance of its log: interpolated
    /// geometrically between opening and closing, the one there is where there is one.
    pub fn reference_at(&self, t: f64) -> Option<(f64, f64)> {
        match self.interpolation(t)?.as_slice() {
            [(one, _)] => Some((one.samples_per_s, one.log_variance())),
            weighted => {
                let (log, var) = weighted.iter().fold((0.0, 0.0), |(l, v), (r, f)| {
                    (l + f * r.samples_per_s.ln(), v + f * f * r.log_variance())
                });
                Some((log.exp(), var))
            }
        }
    }

    /// The reference measurements the reference at unix second `t` is read from, each with
    /// its weight in the geometric interpolation.
    fn interpolation(&self, t: f64) -> Option<Vec<(&BlockReference, f64)>> {
        let positive = |r: &&BlockReference| r.samples_per_s > 0.0;
        let (o, c) = match (
            self.opening.as_ref().filter(positive),
            self.closing.as_ref().filter(positive),
        ) {
            (Some(o), Some(c)) => (o, c),
            (Some(one), None) | (None, Some(one)) => return Some(vec![(one, 1.0)]),
            (None, None) => return None,
        };
        let span = c.mid() - o.mid();
        let f = if span > 0.0 {
            ((t - o.mid()) / span).clamp(0.0, 1.0)
        } else {
            0.5
        };
        Some(vec![(o, 1.0 - f), (c, f)])
    }
}

/// Variance of the log of a rate with the 95% interval `[low, high]` from `windows` windows:
/// the half-width over the Student quantile that made it (the normal one where the count is
/// not recorded, or one window's interval came from its many reports), squared. Reading a
/// four-window interval with the normal quantile would take its variance 2.6 times too large,
/// and the relative interval counts Student's quantile once more for its blocks.
fn log_variance(rate: f64, low: f64, high: f64, windows: u32) -> f64 {
    if rate <= 0.0 {
        return 0.0;
    }
    let quantile = match windows {
        0 | 1 => 1.96,
        n => t_975(n as usize - 1),
    };
    ((high - low) / 2.0 / quantile / rate).powi(2)
}

/// One measurement of a cell: a visit where a launch measured it more than once, else a launch.
struct Measurement {
    rate: f64,
    span: Option<[f64; 2]>,
    /// The launch, where it is a visit.
    launch: Option<u32>,
}

/// Each measurement of `cell`: its visits where a launch measured it more than once, else its
/// launches.
fn measurements(cell: &Cell) -> Vec<Measurement> {
    match cell.visits.is_empty() {
        false => (cell.visits.iter())
            .map(|v| Measurement {
                rate: v.samples_per_s,
                span: Some(v.measured_unix_s),
                launch: Some(v.launch),
            })
            .collect(),
        true => (cell.launches().into_iter())
            .map(|l| Measurement {
                rate: l.samples_per_s,
                span: l.measured_unix_s,
                launch: None,
            })
            .collect(),
    }
}

/// What the blocks say of one measured cell: its log-ratio in each kept block, the launch of
/// each where it is a visit, and the launches of the visits in blocks left out.
#[derive(Debug, Default)]
struct Ratios {
    logs: Vec<f64>,
    launches: Vec<Option<u32>>,
    dropped_launches: Vec<u32>,
}

fn ratios(blocks: &[SweepBlock], cell: &Cell) -> Ratios {
    let mut out = Ratios::default();
    for Measurement { rate, span, launch } in measurements(cell) {
        let Some([s0, s1]) = span else {
            continue;
        };
        let mid = 0.5 * (s0 + s1);
        let Some(block) = blocks.iter().find(|b| b.holds(&cell.params, mid)) else {
            continue;
        };
        if block.left_out() {
            out.dropped_launches.extend(launch);
            continue;
        }
        let Some((reference, _)) = block.reference_at(mid) else {
            continue;
        };
        if rate <= 0.0 {
            continue;
        }
        out.logs.push((rate / reference).ln());
        out.launches.push(launch);
    }
    out
}

/// The log of `cell`'s rate over its block's reference in each kept block it was visited in,
/// with the launch of the visit. The host's speed stays in: at the level the check compares,
/// a job that sizes itself leaves the probe no time on one launch and some on the other, so
/// the probe's speed differs with the launch, not only with the host.
pub fn ratios_by_launch(blocks: &[SweepBlock], cell: &Cell) -> Vec<(u32, f64)> {
    let r = ratios(blocks, cell);
    (r.launches.iter().zip(&r.logs))
        .filter_map(|(launch, log)| Some(((*launch)?, *log)))
        .collect()
}

/// The launches whose visits of `cell` fell in blocks left out (drifted or disturbed).
pub fn left_out_launches(blocks: &[SweepBlock], cell: &Cell) -> Vec<u32> {
    ratios(blocks, cell).dropped_launches
}

/// The standard deviation of one block's log-ratio, pooled over the measured cells of `cells`
/// other than the references, and its degrees of freedom.
pub fn block_spread(blocks: &[SweepBlock], cells: &[Cell]) -> (f64, usize) {
    let is_reference = |c: &Cell| blocks.iter().any(|b| b.is_reference(c));
    let measured: Vec<Ratios> = (cells.iter())
        .filter(|c| c.source == CellSource::Measured && !is_reference(c))
        .map(|c| ratios(blocks, c))
        .collect();
    let (variance, df) = pooled(measured.iter().map(|r| r.logs.as_slice()));
    (variance.sqrt(), df)
}

/// Degrees of freedom from which a cell's own spread stands for it instead of the spread pooled
/// over the sweep's cells: with six blocks or more, or six launches where it has several (fewer
/// give Student's quantile for few degrees of freedom, wider than the pooled spread).
pub const OWN_SPREAD_DF: usize = 5;

/// A modelled cell's relative rate: that of the measured cell it was scaled from (same CPU
/// level and parameters, the most memory) times the model's ratio of the two rates.
pub(super) fn modelled_relative(
    cells: &[Cell],
    relative: &[Option<RelativeRate>],
    cell: &Cell,
) -> Option<RelativeRate> {
    let (source, rel) = cells
        .iter()
        .zip(relative)
        .filter(|(c, r)| {
            c.source == CellSource::Measured
                && r.is_some()
                && c.params == cell.params
                && super::CellKey::new(c.cpu, 0, &c.params).cpu_milli
                    == super::CellKey::new(cell.cpu, 0, &cell.params).cpu_milli
        })
        .max_by_key(|(c, _)| c.memory_bytes)?;
    let factor = cell.samples_per_s()? / source.samples_per_s().filter(|r| *r > 0.0)?;
    factor
        .is_finite()
        .then(|| rel.as_ref().expect("filtered").scaled(factor))
}

/// The absolute rate of a relative rate of 1 among `cells` (one parameter combination), where
/// every cell with a rate has a relative one: the top measured cell's rate over its relative
/// rate (1 for the reference). Relative rates times this keep samples/s as the unit and take
/// the shape from the blocks. `None` where some rate has no relative one.
pub fn absolute_scale(cells: &[&Cell]) -> Option<f64> {
    let rated = cells.iter().filter(|c| c.samples_per_s().is_some());
    if rated.clone().any(|c| c.relative.is_none()) {
        return None;
    }
    let top = rated
        .filter(|c| c.source == CellSource::Measured)
        .max_by(|a, b| {
            a.cpu
                .total_cmp(&b.cpu)
                .then(a.memory_bytes.cmp(&b.memory_bytes))
        })?;
    let scale = top.samples_per_s()? / top.relative.as_ref()?.rate;
    (scale.is_finite() && scale > 0.0).then_some(scale)
}

/// The variance of a sample about its mean pooled over `groups`, with its degrees of freedom
/// (0 and 0 where no group has two members).
fn pooled<'a>(groups: impl IntoIterator<Item = &'a [f64]>) -> (f64, usize) {
    let (mut squares, mut df) = (0.0, 0);
    for g in groups.into_iter().filter(|g| g.len() > 1) {
        let m = crate::stats::mean(g);
        squares += g.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        df += g.len() - 1;
    }
    (if df > 0 { squares / df as f64 } else { 0.0 }, df)
}

mod host_model;
pub use host_model::HostModel;
#[cfg(test)]
mod tests;
