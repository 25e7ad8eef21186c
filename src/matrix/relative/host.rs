//! The host's speed taken out of a cell's ratios. At a fractional CPU level the host's spells
//! on the job's virtual CPU swing a visit's rate by 10% or more while the reference, seconds
//! away or on another CPU, does not share them; a probe on the job's CPUs does
//! (`crate::harness::measure::host_probe`). Each visit's log-ratio is read at the quiet host's
//! speed: less the cell's slope on the probe's log speed times how far the visit's
//! speed lay below it (a control variate). The slope is fitted on the cell's visits
//! themselves where it has [`MIN_VISITS`] or more (one degree of freedom spent); with fewer,
//! on the windows inside them, each centred on its visit, a slope that the probe's noise over
//! a one-second window flattens, so it takes out less than it could. The quiet host's speed is
//! itself an estimate, whose variance the interval carries.

use super::Ratios;
use crate::matrix::visits::{HostSpeed, Visit};
use crate::stats::{interpolated_percentile, mean, mean_sd};

/// Least windows (with a probe speed, in visits of two windows or more) a cell's slope rests
/// on where it has too few visits for theirs.
const MIN_WINDOWS: usize = 8;
/// Least visits a cell's slope is fitted on (two degrees of freedom left).
const MIN_VISITS: usize = 4;

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

/// The least-squares slope of `ys` on `xs`; never below 0 (a slower host does not speed a
/// job up). `None` without spread in `xs`.
fn fitted(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let (mx, my) = (mean(xs), mean(ys));
    let xy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let xx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    (xx > 0.0).then(|| (xy / xx).max(0.0))
}

/// What the windows of `visits` say, each centred on its visit's means: the slope of the
/// job's log rate on the probe's log speed (never below 0) and the share of the windows'
/// variance it explains. `None` with fewer than [`MIN_WINDOWS`] windows or no spread in
/// either.
pub(super) fn window_fit(visits: &[&HostSpeed]) -> Option<(f64, f64)> {
    let (mut xy, mut xx, mut yy, mut n) = (0.0, 0.0, 0.0, 0);
    for v in visits {
        let pairs: Vec<(f64, f64)> = (v.windows.iter())
            .filter(|[rate, speed]| *rate > 0.0 && *speed > 0.0)
            .map(|[rate, speed]| (rate.ln(), speed.ln()))
            .collect();
        if pairs.len() < 2 {
            continue;
        }
        n += pairs.len();
        let (ys, xs): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let (my, mx) = (mean(&ys), mean(&xs));
        for (y, x) in ys.into_iter().zip(xs) {
            xy += (y - my) * (x - mx);
            xx += (x - mx).powi(2);
            yy += (y - my).powi(2);
        }
    }
    if n < MIN_WINDOWS || xx <= 0.0 || yy <= 0.0 {
        return None;
    }
    let slope = (xy / xx).max(0.0);
    let explained = if slope > 0.0 {
        xy * xy / (xx * yy)
    } else {
        0.0
    };
    Some((slope, explained))
}

/// Reads each of `r`'s log-ratios at `level`'s host speed where every one has a probe speed
/// and the cell has visits or windows enough for a slope; else leaves `r` as it is.
pub(super) fn adjust(r: &mut Ratios, level: &HostLevel) {
    let Some(speeds) = (r.hosts.iter())
        .map(|h| h.as_ref().filter(|h| h.speed > 0.0))
        .collect::<Option<Vec<&HostSpeed>>>()
    else {
        return;
    };
    if speeds.len() < 2 {
        return;
    }
    let xs: Vec<f64> = speeds.iter().map(|h| h.speed.ln()).collect();
    let windows = window_fit(&speeds);
    let on_visits = speeds.len() >= MIN_VISITS;
    let b = match on_visits {
        true => fitted(&xs, &r.logs),
        false => windows.map(|w| w.0),
    };
    let Some(b) = b else {
        return;
    };
    // What a visit's windows vary by, less the share the probe's speed explains: the floor
    // of one ratio's spread.
    if let Some((_, explained)) = windows {
        for w in &mut r.within {
            *w *= 1.0 - explained;
        }
    }
    for (log, x) in r.logs.iter_mut().zip(&xs) {
        *log -= b * (x - level.log_speed);
    }
    r.host_slope = Some(b);
    r.slope_df = usize::from(on_visits);
    r.level_variance = b * b * level.variance;
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
        let (slope, explained) = window_fit(&[&a, &b]).unwrap();
        assert!((slope - 1.0).abs() < 1e-9, "{slope}");
        assert!((explained - 1.0).abs() < 1e-9, "{explained}");
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

    /// The quiet level is the 90th percentile of the visits' log speeds, the same every time
    /// for the same visits, with a variance that grows with their spread at the top.
    #[test]
    fn the_quiet_level_is_the_top_of_the_visits_speeds() {
        let cell = |speeds: &[f64]| {
            let mut c = crate::matrix::fixtures::cell(1.0);
            c.source = crate::matrix::CellSource::Measured;
            c.visits = (speeds.iter())
                .map(|&s| crate::matrix::Visit {
                    launch: 1,
                    samples_per_s: 1.0,
                    ci95_low: 1.0,
                    ci95_high: 1.0,
                    measured_s: 1.0,
                    measured_unix_s: [0.0, 1.0],
                    disturbed: false,
                    host: Some(host(s, &[])),
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
