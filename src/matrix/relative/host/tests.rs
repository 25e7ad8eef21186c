use super::*;
use rand_core::{Rng, SeedableRng};

fn point(log_speed: f64, log_rate: f64, noise: f64) -> Point {
    Point {
        log_speed,
        noise,
        log_rate,
    }
}

/// A normal deviate from `rng` (Box-Muller).
fn normal(rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    let u =
        |rng: &mut rand_chacha::ChaCha8Rng| (rng.next_u64() as f64 + 1.0) / (u64::MAX as f64 + 2.0);
    let (a, b) = (u(rng), u(rng));
    (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}

/// Cells of `visits` visits each whose true log speeds spread by 0.1, whose rates follow them
/// at `slope` with a job noise of `job_sd`, and whose probe reads them with a noise of
/// `probe_sd` (recorded as each point's noise where `recorded`).
fn cells(slope: f64, job_sd: f64, probe_sd: f64, recorded: bool, visits: usize) -> Vec<Vec<Point>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    (0..3)
        .map(|c| {
            (0..visits)
                .map(|_| {
                    let truth = 0.1 * normal(&mut rng);
                    let seen = truth + probe_sd * normal(&mut rng);
                    let rate = c as f64 + slope * truth + job_sd * normal(&mut rng);
                    point(seen, rate, if recorded { probe_sd * probe_sd } else { 0.0 })
                })
                .collect()
        })
        .collect()
}

/// Rates that follow the host's speed at a slope of one are read with one, and the fit says
/// they correlate; within cells, whatever their levels.
#[test]
fn rates_that_follow_the_speed_are_proportional() {
    let fit = level_fit(&cells(1.0, 0.005, 0.0, true, 6));
    assert_eq!(fit.model, HostModel::Proportional, "{fit:?}");
    assert_eq!((fit.slope, fit.slope_variance), (1.0, 0.0));
    assert!(fit.correlation > 0.95, "{fit:?}");
    assert_eq!(fit.visits, 18);
}

/// A probe whose own noise is a third of the host's spread flattens the least-squares slope
/// by its reliability; the fit divides it back out, where the uncorrected slope is off.
#[test]
fn the_probes_noise_is_corrected_out_of_the_slope() {
    let noisy = cells(0.6, 0.002, 0.05, true, 200);
    let fit = level_fit(&noisy);
    assert_eq!(fit.model, HostModel::Fitted, "{fit:?}");
    assert!((fit.reliability - 0.8).abs() < 0.05, "{fit:?}");
    assert!((fit.slope - 0.6).abs() < 0.05, "{fit:?}");
    let unknown = level_fit(&cells(0.6, 0.002, 0.05, false, 200));
    assert!((unknown.slope - 0.48).abs() < 0.05, "{unknown:?}");
    assert!(fit.slope_variance > 0.0);
}

/// Where the probe's spread is mostly its noise the level is left alone, as where the rates
/// do not follow the speed, and where there are too few visits.
#[test]
fn a_noisy_probe_an_unrelated_rate_and_few_visits_adjust_nothing() {
    let noisy = level_fit(&cells(1.0, 0.005, 0.15, true, 20));
    assert_eq!(noisy.model, HostModel::Noisy, "{noisy:?}");
    assert!(!noisy.adjusts());
    let unrelated = level_fit(&cells(0.0, 0.01, 0.0, true, 20));
    assert_eq!(unrelated.model, HostModel::NotFollowing, "{unrelated:?}");
    assert!(!unrelated.adjusts());
    let few = level_fit(&cells(1.0, 0.005, 0.0, true, 1));
    assert_eq!(few.model, HostModel::TooFew, "{few:?}");
    let flat = level_fit(&[vec![point(1.0, 1.0, 0.0); 6]]);
    assert_eq!(flat.model, HostModel::Noisy, "{flat:?}");
}

fn host(speed: f64) -> Option<HostSpeed> {
    Some(HostSpeed {
        speed,
        windows: Vec::new(),
        log_variance: 0.0,
    })
}

fn proportional() -> LevelFit {
    LevelFit {
        model: HostModel::Proportional,
        slope: 1.0,
        ..LevelFit::none(HostModel::Proportional, 6)
    }
}

/// Read with a slope of one, each ratio loses the log of its two sides' speed ratio; the raw
/// mean and the share explained are kept. A side with no probe speed leaves the cell raw.
#[test]
fn a_slope_of_one_takes_each_ratios_speed_ratio_out() {
    let speeds = [(1.0, 1.0), (0.8, 1.0), (0.9, 0.7), (1.0, 0.9)];
    let ratios = || Ratios {
        logs: speeds
            .iter()
            .map(|(c, r): &(f64, f64)| (0.25 * c / r).ln())
            .collect(),
        within: vec![1e-6; 4],
        hosts: speeds.iter().map(|(c, _)| host(*c)).collect(),
        reference_speeds: speeds.iter().map(|(_, r)| Some(r.ln())).collect(),
        ..Ratios::default()
    };
    let fit = proportional();
    let mut r = ratios();
    adjust(&mut r, &fit);
    for log in &r.logs {
        assert!((log - 0.25f64.ln()).abs() < 1e-12, "{r:?}");
    }
    assert_eq!(r.host_model, Some(HostModel::Proportional));
    assert_eq!(r.host_slope, Some(1.0));
    assert!((r.explained.unwrap() - 1.0).abs() < 1e-12);
    assert!((r.raw_mean.unwrap() - 0.25f64.ln()).abs() > 0.01, "{r:?}");
    assert_eq!(r.slope_variance, 0.0);
    let mut r = ratios();
    r.reference_speeds[2] = None;
    let before = r.logs.clone();
    adjust(&mut r, &fit);
    assert_eq!(r.logs, before);
    assert!(r.raw_mean.is_none());
}

/// A fitted slope carries its variance times the squared mean speed ratio into the ratios;
/// ratios the probe would widen stay raw, and a level that does not adjust says why.
#[test]
fn a_fitted_slope_carries_its_error_and_never_widens() {
    let fit = LevelFit {
        model: HostModel::Fitted,
        slope: 0.5,
        slope_variance: 0.04,
        ..LevelFit::none(HostModel::Fitted, 6)
    };
    let speeds = [1.0, 0.8, 0.9, 0.7];
    let ratios = |logs: Vec<f64>| Ratios {
        logs,
        within: vec![1e-6; 4],
        hosts: speeds.iter().map(|s| host(*s)).collect(),
        reference_speeds: vec![Some(0.0); 4],
        ..Ratios::default()
    };
    let mut r = ratios(speeds.iter().map(|s: &f64| 0.5 * s.ln()).collect());
    adjust(&mut r, &fit);
    assert!(r.logs.iter().all(|l| l.abs() < 1e-12), "{r:?}");
    let mean_log: f64 = speeds.iter().map(|s: &f64| s.ln()).sum::<f64>() / 4.0;
    assert!((r.slope_variance - 0.04 * mean_log * mean_log).abs() < 1e-12);
    let mut unrelated = ratios(vec![0.0, 0.01, -0.01, 0.0]);
    adjust(&mut unrelated, &fit);
    assert_eq!(unrelated.logs, vec![0.0, 0.01, -0.01, 0.0]);
    assert_eq!(unrelated.host_model, Some(HostModel::Misleads));
    let mut noisy = ratios(vec![0.0, 0.01, -0.01, 0.0]);
    adjust(&mut noisy, &LevelFit::none(HostModel::Noisy, 6));
    assert_eq!(noisy.host_model, Some(HostModel::Noisy));
    assert!(noisy.host_slope.is_none());
}

/// The quiet level is the 90th percentile of the visits' log speeds, the same every time
/// for the same visits; fewer than four visits give none.
#[test]
fn the_quiet_level_is_the_top_of_the_visits_speeds() {
    let visits = |speeds: &[f64]| -> Vec<Visit> {
        (speeds.iter())
            .map(|&s| Visit {
                host: host(s),
                ..crate::matrix::fixtures::visit(1, 1.0, 0.0, 0.0)
            })
            .collect()
    };
    let speeds: Vec<f64> = (1..=11).map(|i| i as f64).collect();
    let level = quiet_log_speed(&visits(&speeds)).unwrap();
    // Eleven speeds, 1 to 11: the 90th percentile lies on the tenth.
    assert!((level - 10f64.ln()).abs() < 1e-12, "{level}");
    assert_eq!(quiet_log_speed(&visits(&speeds)), Some(level));
    assert!(quiet_log_speed(&visits(&[1.0, 2.0, 3.0])).is_none());
}
