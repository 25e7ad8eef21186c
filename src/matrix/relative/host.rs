//! The host's speed taken out of both sides of a cell's ratios. A probe on the job's CPUs
//! (`crate::harness::measure::host_probe`) sees the host's spells on them; each visit's log
//! rate is read at the quiet host's speed: less its CPU level's slope on the probe's log speed
//! times how far the visit's speed lay below the quiet one (a control variate), the cell's
//! visit and its block's reference alike, with the slope of the cell's CPU level, so that the
//! quiet speed cancels from the ratio.
//!
//! The slope is fitted per CPU level (what share of the CPU the probe gets, and so how well
//! it sees, depends on the level) on the visits of the level's cells, each cell centred on
//! its own mean, and divided by the reliability of the probe's speeds (the share of their
//! spread that is not the probe's own noise), the errors-in-variables correction for a noisy
//! regressor. A slope whose interval holds one is one: a CPU-bound job's rate is proportional
//! to the host's speed. Where the probe's spread is mostly its noise, or the rates do not
//! follow it, the level is not adjusted; docs/findings/host-speed-probe.md has the figures
//! behind each choice.

use super::Ratios;
use crate::matrix::visits::{HostSpeed, Visit};
use crate::stats::{interpolated_percentile, mean, mean_sd, t_975};
use serde::{Deserialize, Serialize};

/// How a CPU level's rates follow the probe's speed, and so how they are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostModel {
    /// The fitted slope's interval holds one: rates proportional to the host's speed.
    Proportional,
    /// The fitted slope, its bias for the probe's noise corrected.
    Fitted,
    /// The probe's spread is mostly its own noise (a quiet host, or a probe a job on whole
    /// cores leaves little time): not adjusted.
    Noisy,
    /// The rates do not follow the probe's speed (a job bound by its storage, its memory or
    /// a device): not adjusted.
    NotFollowing,
    /// Too few visits with a probe speed for a slope: not adjusted.
    TooFew,
    /// Read at the quiet host's speed, the cell's ratios spread more than raw: not adjusted.
    Misleads,
}

impl HostModel {
    /// The name the matrix file and the exports use.
    pub fn as_str(self) -> &'static str {
        match self {
            HostModel::Proportional => "proportional",
            HostModel::Fitted => "fitted",
            HostModel::Noisy => "noisy",
            HostModel::NotFollowing => "not_following",
            HostModel::TooFew => "too_few",
            HostModel::Misleads => "misleads",
        }
    }

    /// Words for a person.
    pub fn describe(self) -> &'static str {
        match self {
            HostModel::Proportional => "read at the quiet host's speed (rate proportional)",
            HostModel::Fitted => "read at the quiet host's speed (fitted slope)",
            HostModel::Noisy => "not adjusted: the probe's spread there is mostly its own noise",
            HostModel::NotFollowing => "not adjusted: the job's rate does not follow the probe",
            HostModel::TooFew => "not adjusted: too few visits with the probe's speed",
            HostModel::Misleads => "not adjusted: the probe's speed widened the ratios",
        }
    }
}

/// Least visits a level's slope rests on.
const MIN_VISITS: usize = 4;
/// Least share of the probe's spread over a level's visits that is the host's, not the
/// probe's noise, for its slope to be corrected and used.
const MIN_RELIABILITY: f64 = 0.5;

/// One visit as the fit reads it: the probe's log speed, that log's noise variance, the job's
/// log rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Point {
    pub log_speed: f64,
    pub noise: f64,
    pub log_rate: f64,
}

impl Point {
    pub(super) fn of(v: &Visit) -> Option<Point> {
        let h = v.host.as_ref().filter(|h| h.speed > 0.0)?;
        (v.samples_per_s > 0.0).then(|| Point {
            log_speed: h.speed.ln(),
            noise: h.log_variance,
            log_rate: v.samples_per_s.ln(),
        })
    }
}

/// What the visits of one CPU level say of how its rates follow the probe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LevelFit {
    pub model: HostModel,
    /// The slope the level's rates are read with (0 where not adjusted).
    pub slope: f64,
    /// That slope's variance (0 for a slope of one).
    pub slope_variance: f64,
    /// The fitted slope, corrected, and the correlation of the centred visits.
    pub fitted: f64,
    pub correlation: f64,
    /// The share of the probe's centred spread that is the host's.
    pub reliability: f64,
    pub visits: usize,
}

impl LevelFit {
    pub(super) fn none(model: HostModel, visits: usize) -> LevelFit {
        LevelFit {
            model,
            slope: 0.0,
            slope_variance: 0.0,
            fitted: 0.0,
            correlation: 0.0,
            reliability: 0.0,
            visits,
        }
    }

    pub(super) fn adjusts(&self) -> bool {
        self.slope > 0.0
    }
}

/// Sums of squares and products of `(x, y)` pairs, each group centred on its own means (a
/// regression within groups), over the groups of two pairs or more.
#[derive(Debug, Clone, Copy, Default)]
struct Centred {
    sxx: f64,
    sxy: f64,
    syy: f64,
    n: usize,
    groups: usize,
}

impl Centred {
    fn of<'a>(groups: impl IntoIterator<Item = &'a [(f64, f64)]>) -> Centred {
        let mut c = Centred::default();
        for g in groups.into_iter().filter(|g| g.len() > 1) {
            let k = g.len() as f64;
            let mx = g.iter().map(|p| p.0).sum::<f64>() / k;
            let my = g.iter().map(|p| p.1).sum::<f64>() / k;
            for (x, y) in g {
                c.sxx += (x - mx).powi(2);
                c.sxy += (x - mx) * (y - my);
                c.syy += (y - my).powi(2);
            }
            c.n += g.len();
            c.groups += 1;
        }
        c
    }
}

/// The fit of a level whose cells' visits are `groups` (one group a cell).
pub(super) fn level_fit(groups: &[Vec<Point>]) -> LevelFit {
    let pairs: Vec<Vec<(f64, f64)>> = (groups.iter())
        .map(|g| g.iter().map(|p| (p.log_speed, p.log_rate)).collect())
        .collect();
    let Centred {
        sxx,
        sxy,
        syy,
        n,
        groups: cells,
    } = Centred::of(pairs.iter().map(Vec::as_slice));
    // What the probe's noise adds to the centred spread in speed.
    let noise: f64 = (groups.iter().filter(|g| g.len() > 1))
        .flat_map(|g| {
            g.iter()
                .map(move |p| p.noise * (1.0 - 1.0 / g.len() as f64))
        })
        .sum();
    // One degree of freedom for each cell's mean, one for the slope.
    let df = n.saturating_sub(cells + 1);
    if n < MIN_VISITS || df < 2 {
        return LevelFit::none(HostModel::TooFew, n);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return LevelFit::none(HostModel::Noisy, n);
    }
    let correlation = sxy / (sxx * syy).sqrt();
    // The probe's noise as its successive bursts give it, but never below what the visits'
    // correlation proves was the host's: a correlation `r` needs a reliability of `r²` at
    // least (the true slope lies between the regression of rate on speed and the reverse
    // one's), and the bursts' differences also hold the host's own fast swings, which the
    // job shares.
    let reliability = (1.0 - noise / sxx).max(correlation.powi(2)).min(1.0);
    if reliability < MIN_RELIABILITY {
        return LevelFit {
            reliability,
            correlation,
            ..LevelFit::none(HostModel::Noisy, n)
        };
    }
    let ols = sxy / sxx;
    let fitted = ols / reliability;
    let residual = (syy - ols * sxy).max(0.0) / df as f64;
    let se = (residual / sxx).sqrt() / reliability;
    let q = t_975(df);
    let fit = LevelFit {
        fitted,
        correlation,
        reliability,
        ..LevelFit::none(HostModel::NotFollowing, n)
    };
    if (fitted - 1.0).abs() <= q * se {
        LevelFit {
            model: HostModel::Proportional,
            slope: 1.0,
            ..fit
        }
    } else if fitted - q * se > 0.0 {
        LevelFit {
            model: HostModel::Fitted,
            slope: fitted,
            slope_variance: se * se,
            ..fit
        }
    } else {
        fit
    }
}

/// Where among the visits' speeds the quiet host's is read, in percent.
const QUIET_PERCENTILE: f64 = 90.0;

/// The quiet host's log speed, the one absolute rates are read at: a high percentile
/// ([`QUIET_PERCENTILE`]) of the log speeds of those of `visits` with a probe speed; `None`
/// with fewer than four. A spell only slows the host, so the top of the visits' speeds is the
/// quiet host's, which sweeps share.
pub(super) fn quiet_log_speed<'a>(visits: impl IntoIterator<Item = &'a Visit>) -> Option<f64> {
    let mut logs: Vec<f64> = (visits.into_iter())
        .filter_map(|v| v.host.as_ref())
        .filter(|h| h.speed > 0.0)
        .map(|h| h.speed.ln())
        .collect();
    if logs.len() < 4 {
        return None;
    }
    logs.sort_by(f64::total_cmp);
    Some(interpolated_percentile(&logs, QUIET_PERCENTILE))
}

/// The share of the windows' variance inside `visits` that the probe's windows explain: what
/// a visit's own windows floor a ratio's spread by, less what the host did meanwhile.
pub(super) fn windows_explained(visits: &[&HostSpeed]) -> Option<f64> {
    let pairs: Vec<Vec<(f64, f64)>> = (visits.iter())
        .map(|v| {
            (v.windows.iter())
                .filter(|[rate, speed]| *rate > 0.0 && *speed > 0.0)
                .map(|[rate, speed]| (speed.ln(), rate.ln()))
                .collect()
        })
        .collect();
    let c = Centred::of(pairs.iter().map(Vec::as_slice));
    (c.n >= 8 && c.sxx > 0.0 && c.syy > 0.0 && c.sxy > 0.0).then(|| c.sxy * c.sxy / (c.sxx * c.syy))
}

/// Reads each of `r`'s log-ratios at the quiet host's speed with `fit`, the slope of the
/// cell's CPU level, on both its sides: a ratio loses `b x (x_cell - x_ref)`, the log of its
/// sides' speed ratio times the slope, so the quiet speed itself cancels. Only where every
/// ratio has both speeds; records the model, the raw mean and the share of the ratios'
/// spread explained. A cell whose adjusted ratios would spread more than its raw ones is
/// left raw.
pub(super) fn adjust(r: &mut Ratios, fit: &LevelFit) {
    r.host_model = Some(fit.model);
    if !fit.adjusts() {
        return;
    }
    let speed = |h: &Option<HostSpeed>| h.as_ref().filter(|h| h.speed > 0.0).map(|h| h.speed.ln());
    let (Some(xc), Some(xr)) = (
        r.hosts.iter().map(speed).collect::<Option<Vec<f64>>>(),
        r.reference_speeds
            .iter()
            .copied()
            .collect::<Option<Vec<f64>>>(),
    ) else {
        return;
    };
    let b = fit.slope;
    let adjusted: Vec<f64> = (r.logs.iter().zip(xc.iter().zip(&xr)))
        .map(|(log, (c, f))| log - b * (c - f))
        .collect();
    let spread = |logs: &[f64]| mean_sd(logs).1.powi(2);
    let explained = match r.logs.len() {
        0 | 1 => None,
        _ if spread(&r.logs) > 0.0 => Some(1.0 - spread(&adjusted) / spread(&r.logs)),
        _ => None,
    };
    if explained.is_some_and(|e| e < 0.0) {
        r.host_model = Some(HostModel::Misleads);
        return;
    }
    r.raw_mean = Some(mean(&r.logs));
    r.explained = explained;
    r.logs = adjusted;
    if let Some(share) = windows_explained(&r.hosts.iter().flatten().collect::<Vec<_>>()) {
        for within in &mut r.within {
            *within *= 1.0 - share;
        }
    }
    r.host_slope = Some(b);
    // Another sweep's slope differs by the estimate's error, times the mean speed ratio.
    r.slope_variance = fit.slope_variance * (mean(&xc) - mean(&xr)).powi(2);
}

#[cfg(test)]
mod tests;
