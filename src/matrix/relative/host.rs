//! The host's speed taken out of a cell's ratios. At a fractional CPU level the host's spells
//! on the job's virtual CPU swing a visit's rate by 10% or more while the reference, seconds
//! away or on another CPU, does not share them; a probe on the job's CPUs does
//! (`crate::harness::measure::host_probe`). Each visit's log-ratio is read at the quiet host's
//! speed: less the cell's slope on the probe's log speed times how far the visit's
//! speed lay below it (a control variate). The slope is fitted on the windows inside the
//! cell's visits, each centred on its visit: the probe's noise over a one-second window
//! flattens it, so it takes out less than it could, and what it leaves stays in the spread
//! between blocks. Not on the visits themselves: four or six of them on a host that was
//! quiet meanwhile barely spread in speed, so their slope is noise, and read at the quiet
//! speed away from their mean its error took the interval to twice the raw one. The quiet
//! speed and the slope are estimates, whose variances the interval carries.

use super::Ratios;
use crate::matrix::visits::{HostSpeed, Visit};
use crate::stats::{interpolated_percentile, mean, mean_sd};

/// Least windows (with a probe speed, in visits of two windows or more) a cell's slope rests
/// on.
const MIN_WINDOWS: usize = 8;

/// The host speed every adjusted ratio is read at: the quiet host's, a high percentile
/// ([`QUIET_PERCENTILE`]) of the log speeds of the visits of a cell's blocks, and that
/// estimate's variance (another sweep reads at its own). A spell only slows the host, so the top of the visits' speeds is the quiet
/// host's, which sweeps share: on a 2-core VM the means of the visits' speeds of four sweeps
/// spread from 331 to 355 million a second, their 90th percentiles from 372.5 to 377.7 (a
/// fifth, through a long spell, 332.7).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct HostLevel {
    pub log_speed: f64,
    pub variance: f64,
}

/// Where among the visits' speeds the quiet host's is read, in percent.
const QUIET_PERCENTILE: f64 = 90.0;
/// Resamples of the visits that give the quiet speed's variance.
const RESAMPLES: usize = 400;

/// The host level over those of `visits` with a probe speed (a cell's and its reference's in
/// the blocks that measured it: points measured later, a resumed sweep's, leave it as it
/// was); `None` with fewer than four. Its variance is a bootstrap's over the visits (a fixed
/// seed: the same matrix gives the same intervals).
pub(super) fn host_level<'a>(visits: impl IntoIterator<Item = &'a Visit>) -> Option<HostLevel> {
    use rand_core::{Rng, SeedableRng};
    let mut logs: Vec<f64> = (visits.into_iter())
        .filter_map(|v| v.host.as_ref())
        .filter(|h| h.speed > 0.0)
        .map(|h| h.speed.ln())
        .collect();
    if logs.len() < 4 {
        return None;
    }
    logs.sort_by(f64::total_cmp);
    let level = interpolated_percentile(&logs, QUIET_PERCENTILE);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut sample = vec![0.0; logs.len()];
    let resampled: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            for x in sample.iter_mut() {
                *x = logs[(rng.next_u64() % logs.len() as u64) as usize];
            }
            sample.sort_by(f64::total_cmp);
            interpolated_percentile(&sample, QUIET_PERCENTILE)
        })
        .collect();
    let (_, sd) = mean_sd(&resampled);
    Some(HostLevel {
        log_speed: level,
        variance: sd * sd,
    })
}

/// What the windows of `visits` say, each centred on its visit's means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct WindowFit {
    /// The slope of the job's log rate on the probe's log speed, never below 0.
    pub slope: f64,
    /// The share of the windows' variance the slope explains.
    pub explained: f64,
    /// The slope's variance: the windows' residual variance over their spread in speed.
    pub slope_variance: f64,
}

/// The windows' fit of `visits`; `None` with fewer than [`MIN_WINDOWS`] windows, too few
/// for a residual, or no spread in either.
pub(super) fn window_fit(visits: &[&HostSpeed]) -> Option<WindowFit> {
    let (mut xy, mut xx, mut yy, mut n, mut groups) = (0.0, 0.0, 0.0, 0, 0);
    for v in visits {
        let pairs: Vec<(f64, f64)> = (v.windows.iter())
            .filter(|[rate, speed]| *rate > 0.0 && *speed > 0.0)
            .map(|[rate, speed]| (rate.ln(), speed.ln()))
            .collect();
        if pairs.len() < 2 {
            continue;
        }
        n += pairs.len();
        groups += 1;
        let (ys, xs): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let (my, mx) = (mean(&ys), mean(&xs));
        for (y, x) in ys.into_iter().zip(xs) {
            xy += (y - my) * (x - mx);
            xx += (x - mx).powi(2);
            yy += (y - my).powi(2);
        }
    }
    // One degree of freedom for each visit's mean, one for the slope.
    let df = n.saturating_sub(groups + 1);
    if n < MIN_WINDOWS || df == 0 || xx <= 0.0 || yy <= 0.0 {
        return None;
    }
    let slope = (xy / xx).max(0.0);
    let explained = if slope > 0.0 {
        xy * xy / (xx * yy)
    } else {
        0.0
    };
    let residual = (yy - slope * xy).max(0.0) / df as f64;
    Some(WindowFit {
        slope,
        explained,
        slope_variance: residual / xx,
    })
}

/// Reads each of `r`'s log-ratios at `level`'s host speed where every one has a probe speed
/// and the cell's visits have windows enough for a slope; else leaves `r` as it is.
pub(super) fn adjust(r: &mut Ratios, level: &HostLevel) {
    let Some(speeds) = (r.hosts.iter())
        .map(|h| h.as_ref().filter(|h| h.speed > 0.0))
        .collect::<Option<Vec<&HostSpeed>>>()
    else {
        return;
    };
    let Some(fit) = window_fit(&speeds) else {
        return;
    };
    // What a visit's windows vary by, less the share the probe's speed explains: the floor
    // of one ratio's spread.
    for within in &mut r.within {
        *within *= 1.0 - fit.explained;
    }
    let xs: Vec<f64> = speeds.iter().map(|h| h.speed.ln()).collect();
    for (log, x) in r.logs.iter_mut().zip(&xs) {
        *log -= fit.slope * (x - level.log_speed);
    }
    // The mean is read at the quiet speed, away from the visits' mean speed: the slope's
    // error times that distance moves it.
    let distance = level.log_speed - mean(&xs);
    r.host_slope = Some(fit.slope);
    r.level_variance = fit.slope.powi(2) * level.variance;
    r.slope_variance = distance.powi(2) * fit.slope_variance;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(speed: f64, windows: &[[f64; 2]]) -> HostSpeed {
        HostSpeed {
            speed,
            windows: windows.to_vec(),
        }
    }

    /// The windows' slope is taken within visits: two visits at different levels whose windows
    /// each move at a slope of one give one, whatever the levels; the share explained is all.
    #[test]
    fn the_windows_slope_is_within_visits() {
        let a = host(
            1.0,
            &[[100.0, 1.0], [110.0, 1.1], [90.0, 0.9], [100.0, 1.0]],
        );
        let b = host(2.0, &[[10.0, 2.0], [11.0, 2.2], [9.0, 1.8], [10.0, 2.0]]);
        let fit = window_fit(&[&a, &b]).unwrap();
        assert!((fit.slope - 1.0).abs() < 1e-9, "{fit:?}");
        assert!((fit.explained - 1.0).abs() < 1e-9, "{fit:?}");
        assert!(fit.slope_variance < 1e-12, "{fit:?}");
        assert!(window_fit(&[&a]).is_none(), "four windows are too few");
        let flat = host(
            1.0,
            &[[100.0, 1.0], [110.0, 1.0], [90.0, 1.0], [100.0, 1.0]],
        );
        assert!(
            window_fit(&[&flat, &flat.clone()]).is_none(),
            "no spread in the speed"
        );
    }

    /// Read at the quiet speed with the windows' slope, a mean whose visits all lay far
    /// below that speed carries the slope's error times the distance; one whose visits
    /// surround it, almost none. Windows that follow the speed exactly leave the slope no
    /// error at all.
    #[test]
    fn a_quiet_speed_far_from_the_visits_widens_the_mean() {
        let slope_variance = |speeds: [f64; 4], noise: f64| {
            let visits: Vec<HostSpeed> = (speeds.iter())
                .map(|&s| {
                    let windows = [0.95, 1.05, 1.0, 0.98]
                        .iter()
                        .zip([1.0 + noise, 1.0 - noise, 1.0, 1.0])
                        .map(|(w, n)| [100.0 * s * w * n, s * w])
                        .collect::<Vec<_>>();
                    host(s, &windows)
                })
                .collect();
            let mut r = Ratios {
                logs: speeds.iter().map(|s: &f64| s.ln() - 1.0).collect(),
                within: vec![0.0; 4],
                hosts: visits.into_iter().map(Some).collect(),
                ..Ratios::default()
            };
            let level = HostLevel {
                log_speed: 0.0,
                variance: 0.0,
            };
            adjust(&mut r, &level);
            assert!((r.host_slope.unwrap() - 1.0).abs() < 0.2, "{r:?}");
            r.slope_variance
        };
        let (far, around) = (
            slope_variance([0.6, 0.65, 0.7, 0.75], 0.01),
            slope_variance([0.9, 0.95, 1.05, 1.1], 0.01),
        );
        assert!(far > 100.0 * around, "{far} {around}");
        assert!(far > 1e-5, "{far}");
        assert!(slope_variance([0.6, 0.65, 0.7, 0.75], 0.0) < 1e-20);
    }

    /// The quiet level is the 90th percentile of the visits' log speeds, the same every time
    /// for the same visits, with a variance that grows with their spread at the top.
    #[test]
    fn the_quiet_level_is_the_top_of_the_visits_speeds() {
        let cell = |speeds: &[f64]| {
            let mut c = crate::matrix::fixtures::cell(1.0);
            c.source = crate::matrix::CellSource::Measured;
            c.visits = (speeds.iter())
                .map(|&s| crate::matrix::Visit {
                    host: Some(host(s, &[])),
                    ..crate::matrix::fixtures::visit(1, 1.0, 0.0, 0.0)
                })
                .collect();
            c
        };
        let speeds: Vec<f64> = (1..=11).map(|i| i as f64).collect();
        let level = host_level(&cell(&speeds).visits).unwrap();
        // Eleven speeds, 1 to 11: the 90th percentile lies on the tenth.
        assert!((level.log_speed - 10f64.ln()).abs() < 1e-12, "{level:?}");
        assert_eq!(host_level(&cell(&speeds).visits), Some(level));
        let tight = host_level(&cell(&[1.0, 1.0, 1.0, 1.0, 1.0, 0.5]).visits).unwrap();
        assert!(tight.variance < level.variance, "{tight:?} {level:?}");
        assert!(host_level(&cell(&[1.0, 2.0, 3.0]).visits).is_none());
    }
}
