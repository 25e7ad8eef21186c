//! What a sweep's cells and blocks give the host adjustment (`super::host`): each CPU level's
//! fit from the visits of its cells in kept blocks, both sides of a cell's ratios read at the
//! quiet host's speed, the cells' absolute rates read there too, and the line a sweep prints.

use super::host::{self, HostModel, LevelFit};
use super::{Ratios, SweepBlock};
use crate::matrix::visits::Visit;
use crate::matrix::{Cell, CellKey, CellSource};
use crate::stats::mean;
use std::collections::BTreeMap;

/// A CPU level of a parameter combination: the key of its cells with the memory left out.
fn level_of(c: &Cell) -> CellKey {
    CellKey::new(c.cpu, 0, &c.params)
}

/// The visits of `cell` inside its kept blocks.
fn kept_visits<'a>(blocks: &[SweepBlock], cell: &'a Cell) -> impl Iterator<Item = &'a Visit> {
    let mid = |v: &Visit| 0.5 * (v.measured_unix_s[0] + v.measured_unix_s[1]);
    (cell.visits.iter())
        .filter(move |v| (blocks.iter()).any(|b| !b.left_out() && b.holds(&cell.params, mid(v))))
}

/// How each CPU level's rates follow the probe, from the visits of its measured cells in
/// kept blocks (under a hog, a disturbed block, the probe's speed is not the host's). A level
/// with too few visits for a slope of its own (a relaunching sweep's, a visit a pass) takes
/// the fit of all its parameter combination's levels together, each cell still centred on
/// its own mean.
pub(super) fn level_fits(blocks: &[SweepBlock], cells: &[Cell]) -> BTreeMap<CellKey, LevelFit> {
    let mut groups: BTreeMap<CellKey, Vec<Vec<host::Point>>> = BTreeMap::new();
    for c in cells.iter().filter(|c| c.source == CellSource::Measured) {
        let points: Vec<host::Point> = kept_visits(blocks, c).filter_map(host::Point::of).collect();
        groups.entry(level_of(c)).or_default().push(points);
    }
    let mut pooled: BTreeMap<&BTreeMap<String, String>, Vec<Vec<host::Point>>> = BTreeMap::new();
    for (level, g) in &groups {
        pooled
            .entry(&level.params)
            .or_default()
            .extend(g.iter().cloned());
    }
    let sweep: BTreeMap<&BTreeMap<String, String>, LevelFit> = (pooled.iter())
        .map(|(params, g)| (*params, host::level_fit(g)))
        .collect();
    (groups.iter())
        .map(|(level, g)| {
            let fit = match host::level_fit(g) {
                few if few.model == HostModel::TooFew => sweep[&level.params],
                fit => fit,
            };
            (level.clone(), fit)
        })
        .collect()
}

/// Reads `r`, the ratios of `cell`, at the quiet host's speed on both sides, with the slope
/// its CPU level's fit gives (`relative/host.rs`).
pub(super) fn read_at_quiet_host(
    blocks: &[SweepBlock],
    cells: &[Cell],
    cell: &Cell,
    fits: &BTreeMap<CellKey, LevelFit>,
    r: &mut Ratios,
) {
    let Some(fit) = fits.get(&level_of(cell)) else {
        return;
    };
    let reference = (cells.iter()).find(|c| {
        c.source == CellSource::Measured
            && c.params == cell.params
            && blocks.iter().any(|b| b.is_reference(c))
    });
    r.reference_speeds = (r.mids.iter())
        .map(|&t| {
            let block = blocks.iter().find(|b| b.holds(&cell.params, t))?;
            block.reference_log_speed(reference?, t)
        })
        .collect();
    host::adjust(r, fit);
}

/// One line on what the probe of the host's speed on the job's CPUs saw: how far its speed
/// spread over the visits of kept blocks, and at each CPU level how the rates followed it
/// and what share of the ratios' spread it explained; `None` where no visit has its speed.
pub fn describe_host(cells: &[Cell], blocks: &[SweepBlock]) -> Option<String> {
    let speeds: Vec<f64> = (cells.iter())
        .filter(|c| c.source == CellSource::Measured)
        .flat_map(|c| kept_visits(blocks, c))
        .filter_map(|v| {
            v.host
                .as_ref()
                .filter(|h| h.speed > 0.0)
                .map(|h| h.speed.ln())
        })
        .collect();
    if speeds.len() < 2 {
        return None;
    }
    let spread = crate::stats::mean_sd(&speeds).1;
    let host = QuietHost::of(blocks, cells);
    let levels: Vec<String> = (host.fits.iter())
        .map(|(level, fit)| {
            let relative: Vec<&super::RelativeRate> = (cells.iter())
                .filter(|c| &level_of(c) == level)
                .filter_map(|c| c.relative.as_ref())
                .collect();
            let explained: Vec<f64> = relative.iter().filter_map(|r| r.host_explained).collect();
            let raw = (relative.iter())
                .filter(|r| r.host_model == Some(HostModel::Misleads))
                .count();
            let left_raw = match raw {
                0 => String::new(),
                n => format!(" ({n} cell(s) left raw: the probe's speed widened their ratios)"),
            };
            let share = match explained.is_empty() {
                true => String::new(),
                false => format!(
                    ", {:.0}% of the ratios' spread explained",
                    100.0 * crate::stats::median(&explained)
                ),
            };
            let params: Vec<String> = (level.params.iter())
                .map(|(k, v)| format!(" {k}={v}"))
                .collect();
            format!(
                "{} CPU{} r {:.2}: {}{share}{left_raw}",
                level.cpu_milli as f64 / 1000.0,
                params.concat(),
                fit.correlation,
                fit.model.describe()
            )
        })
        .collect();
    let launches = match host.launch_spreads(cells) {
        Some((raw, quiet)) => format!(
            "; the launches' rates of those levels lie ±{:.1}% apart, ±{:.1}% at the quiet \
             host's speed",
            100.0 * raw,
            100.0 * quiet
        ),
        None => String::new(),
    };
    Some(format!(
        "host's speed on the job's CPUs (the probe): ±{:.1}% over {} visits; {}{launches}",
        100.0 * spread,
        speeds.len(),
        levels.join("; ")
    ))
}

/// What reading absolute rates at the quiet host's speed takes of a sweep, worked out once:
/// each level's fit and each parameter combination's quiet log speed (over its measured
/// cells' kept visits).
struct QuietHost<'a> {
    blocks: &'a [SweepBlock],
    fits: BTreeMap<CellKey, LevelFit>,
    quiet: BTreeMap<&'a BTreeMap<String, String>, f64>,
}

impl<'a> QuietHost<'a> {
    fn of(blocks: &'a [SweepBlock], cells: &'a [Cell]) -> QuietHost<'a> {
        let measured = || cells.iter().filter(|c| c.source == CellSource::Measured);
        let quiet = (measured().map(|c| &c.params))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .filter_map(|params| {
                let visits = measured()
                    .filter(|c| &c.params == params)
                    .flat_map(|c| kept_visits(blocks, c));
                Some((params, host::quiet_log_speed(visits)?))
            })
            .collect();
        QuietHost {
            blocks,
            fits: level_fits(blocks, cells),
            quiet,
        }
    }

    /// The slope and the quiet log speed `cell`'s absolute rates are read with, where its
    /// level follows the probe and its parameter combination has a quiet level.
    fn reading(&self, cell: &Cell) -> Option<(f64, f64)> {
        let fit = self.fits.get(&level_of(cell)).filter(|f| f.adjusts())?;
        Some((fit.slope, *self.quiet.get(&cell.params)?))
    }

    /// How far the launches' absolute rates lie apart, raw and read at the quiet host's speed:
    /// the standard deviation of a launch's mean log rate about its cell's, pooled over the
    /// measured cells visited on two launches or more at levels the probe follows; `None`
    /// where no such cell is.
    fn launch_spreads(&self, cells: &[Cell]) -> Option<(f64, f64)> {
        let (mut raw, mut quiet): (Vec<Vec<f64>>, Vec<Vec<f64>>) = (Vec::new(), Vec::new());
        for c in cells.iter().filter(|c| c.source == CellSource::Measured) {
            let Some((slope, q)) = self.reading(c) else {
                continue;
            };
            let mut by_launch: BTreeMap<u32, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
            for v in kept_visits(self.blocks, c) {
                let Some(p) = host::Point::of(v) else {
                    continue;
                };
                let (r, at_quiet) = by_launch.entry(v.launch).or_default();
                r.push(p.log_rate);
                at_quiet.push(p.log_rate - slope * (p.log_speed - q));
            }
            if by_launch.len() > 1 {
                raw.push(by_launch.values().map(|l| mean(&l.0)).collect());
                quiet.push(by_launch.values().map(|l| mean(&l.1)).collect());
            }
        }
        let pooled = |groups: &[Vec<f64>]| super::spread::pooled(groups.iter().map(Vec::as_slice));
        let ((raw, df), (quiet, _)) = (pooled(&raw), pooled(&quiet));
        (df > 0).then(|| (raw.sqrt(), quiet.sqrt()))
    }
}

/// Every cell's absolute rate read at the quiet host's speed, in `cells`' order: a measured
/// cell whose CPU level follows the probe (`proportional` or `fitted`) and whose kept visits
/// all have its speed, its rate times `exp(-b x (mean log speed - q))`, `q` the quiet level of
/// its parameter combination's kept visits; `None` elsewhere. Launches measured in different
/// spells then agree as far as the probe saw the spells.
pub fn quiet_host_rates(blocks: &[SweepBlock], cells: &[Cell]) -> Vec<Option<f64>> {
    let host = QuietHost::of(blocks, cells);
    cells
        .iter()
        .map(|c| {
            let (slope, q) = host.reading(c)?;
            let rate = c.samples_per_s().filter(|r| *r > 0.0)?;
            let speeds = (kept_visits(blocks, c))
                .map(|v| {
                    v.host
                        .as_ref()
                        .filter(|h| h.speed > 0.0)
                        .map(|h| h.speed.ln())
                })
                .collect::<Option<Vec<f64>>>()
                .filter(|s| !s.is_empty())?;
            let factor = (-slope * (mean(&speeds) - q)).exp();
            Some(rate * factor).filter(|r| r.is_finite())
        })
        .collect()
}
