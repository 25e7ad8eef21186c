use super::*;
use crate::matrix::fixtures::{measured, visit};
use crate::matrix::visits::HostSpeed;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

const GIB: u64 = 1 << 30;

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let v = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u.max(1e-300).ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A simulated live sweep of three CPU levels: each of `launches` launches walks the levels
/// `rounds` times; the host's speed wanders in spells; the two lower levels follow it with
/// slope 1 and the top (accelerator-bound) not at all; each launch shifts every rate by its
/// own factor; each visit has `noise` of log-normal noise. The true relative rates at the
/// probe speed `S0` are 0.6 and 0.3.
struct Simulated {
    launches: u32,
    rounds: u32,
    noise: f64,
    spell: f64,
}

const S0: f64 = 500e6;
const TRUTH: [(f64, f64); 3] = [(2.0, 1.0), (1.0, 0.6), (0.5, 0.3)];

impl Simulated {
    fn sweep(&self, rng: &mut ChaCha8Rng) -> Vec<Cell> {
        let mut cells: Vec<Cell> = TRUTH
            .iter()
            .map(|(cpu, _)| measured(*cpu, GIB, 1.0, None))
            .collect();
        let mut t = 0.0;
        for launch in 1..=self.launches {
            let shift = 0.05 * normal(rng);
            for _ in 0..self.rounds {
                for (i, (_, truth)) in TRUTH.iter().enumerate() {
                    let log_speed = S0.ln() - self.spell * normal(rng).abs();
                    let slope = if i == 0 { 0.0 } else { 1.0 };
                    let log_rate = (1000.0 * truth).ln()
                        + shift
                        + slope * (log_speed - S0.ln())
                        + self.noise * normal(rng);
                    let mut v = visit(launch, log_rate.exp(), t, 0.02);
                    v.host = Some(HostSpeed {
                        speed: log_speed.exp(),
                        windows: Vec::new(),
                        log_variance: 0.0,
                    });
                    cells[i].visits.push(v);
                    t += 10.0;
                }
            }
        }
        cells
    }
}

fn fitted(cells: &[Cell], read_at: ReadAt) -> FittedSweep {
    FittedSweep::fit(Sample::of(cells, &BTreeMap::new()), read_at)
}

/// The model reads each cell at the reading speed: the spells the quota-bound levels followed
/// are taken out, and the estimate lies within its interval of the truth.
#[test]
fn reads_cells_at_the_reading_speed() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let sim = Simulated {
        launches: 2,
        rounds: 3,
        noise: 0.02,
        spell: 0.15,
    };
    let f = fitted(&sim.sweep(&mut rng), ReadAt::Speed(S0));
    assert!((f.read_at().unwrap() / S0 - 1.0).abs() < 1e-12);
    for (i, (_, truth)) in TRUTH.iter().enumerate() {
        let r = f.relative(i).unwrap();
        assert!(
            (r.log_rate - truth.ln()).abs() < r.log_half_width.max(1e-12),
            "cell {i}: {r:?}"
        );
        assert_eq!(r.visits, 6);
    }
    let slope = f.relative(1).unwrap().slope.unwrap();
    assert!((slope - 1.0).abs() < 0.2, "{slope}");
    assert!(f.relative(0).unwrap().slope.unwrap().abs() < 0.2);
}

/// Over many pairs of simulated sweeps, one sweep's 95% interval holds the other's estimate
/// about 95% of the time: neither much less (dishonest) nor always (needlessly wide).
#[test]
fn intervals_hold_another_sweeps_estimate_about_95_percent_of_the_time() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let sim = Simulated {
        launches: 2,
        rounds: 2,
        noise: 0.04,
        spell: 0.1,
    };
    let (mut inside, mut total) = (0, 0);
    for _ in 0..300 {
        let a = fitted(&sim.sweep(&mut rng), ReadAt::Speed(S0));
        let b = fitted(&sim.sweep(&mut rng), ReadAt::Speed(S0));
        for i in 1..3 {
            let (ra, rb) = (a.relative(i).unwrap(), b.relative(i).unwrap());
            total += 1;
            inside += usize::from((ra.log_rate - rb.log_rate).abs() <= ra.log_half_width);
        }
    }
    let coverage = inside as f64 / total as f64;
    assert!((0.92..=0.985).contains(&coverage), "{coverage}");
}

/// A visit the machine disturbed (its rate halved) widens the interval so that it still
/// holds the clean sweep's estimate: honest, not narrow.
#[test]
fn a_disturbed_visit_widens_the_interval() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let sim = Simulated {
        launches: 2,
        rounds: 3,
        noise: 0.01,
        spell: 0.1,
    };
    let mut cells = sim.sweep(&mut rng);
    let clean = fitted(&cells, ReadAt::Speed(S0)).relative(1).unwrap();
    cells[1].visits[2].samples_per_s *= 0.5;
    let hit = fitted(&cells, ReadAt::Speed(S0)).relative(1).unwrap();
    assert!(
        hit.half_width() > 2.0 * clean.half_width(),
        "{hit:?} {clean:?}"
    );
    assert!(
        (hit.log_rate - clean.log_rate).abs() < hit.log_half_width,
        "{hit:?} {clean:?}"
    );
}

/// A relaunching sweep measures each cell on a launch of its own: launches get no shift (it
/// would fit each visit exactly), and their spread is the noise.
#[test]
fn launches_of_one_cell_are_noise() {
    let mut cells: Vec<Cell> = TRUTH
        .iter()
        .map(|(cpu, _)| measured(*cpu, GIB, 1.0, None))
        .collect();
    let mut launch = 0;
    for round in 0..3 {
        for (i, (_, truth)) in TRUTH.iter().enumerate() {
            launch += 1;
            let wobble = [1.0, 1.1, 0.9][(round + i) % 3];
            cells[i]
                .visits
                .push(visit(launch, 100.0 * truth * wobble, launch as f64, 0.01));
        }
    }
    let f = fitted(&cells, DEFAULT_READ_AT);
    assert_eq!(f.read_at(), None);
    let r = f.relative(1).unwrap();
    assert_eq!(r.degrees_of_freedom, 9 - 3);
    assert!((r.log_rate - 0.6f64.ln()).abs() < 0.01);
    assert!(
        r.half_width() > 0.1,
        "the launches' ±10% is in the interval: {r:?}"
    );
}

/// Every cell of the matrix gets its relative rate: the reference 1 with no width, measured
/// cells from the model, modelled cells from their CPU level's measured cell times the cache
/// model's ratio, failed cells none.
#[test]
fn relative_rates_cover_the_matrix() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let sim = Simulated {
        launches: 2,
        rounds: 2,
        noise: 0.02,
        spell: 0.05,
    };
    let mut cells = sim.sweep(&mut rng);
    for c in &mut cells {
        let mean = c.visits.iter().map(|v| v.samples_per_s).sum::<f64>() / 4.0;
        c.throughput.as_mut().unwrap().samples_per_s = mean;
    }
    let mut modelled = measured(1.0, GIB / 2, 0.0, None);
    modelled.source = CellSource::Modelled;
    modelled.throughput.as_mut().unwrap().samples_per_s = 0.5 * cells[1].samples_per_s().unwrap();
    cells.push(modelled);
    cells.push(crate::matrix::fixtures::cell(0.5));
    let rel = relative_rates(&cells, ReadAt::Speed(S0));
    let top = rel[0].as_ref().unwrap();
    assert_eq!((top.rate, top.ci95_low, top.ci95_high), (1.0, 1.0, 1.0));
    let one = rel[1].as_ref().unwrap();
    let half = rel[3].as_ref().unwrap();
    assert!((half.rate / one.rate - 0.5).abs() < 1e-9);
    assert!(rel[4].is_none());
    assert!(one.host_slope.is_some());
}

/// Without any probe reading the model has no slopes and reads the cells as measured.
#[test]
fn without_a_probe_nothing_is_read_at_a_speed() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let sim = Simulated {
        launches: 2,
        rounds: 2,
        noise: 0.02,
        spell: 0.0,
    };
    let mut cells = sim.sweep(&mut rng);
    for c in &mut cells {
        for v in &mut c.visits {
            v.host = None;
        }
    }
    let f = fitted(&cells, DEFAULT_READ_AT);
    assert_eq!(f.read_at(), None);
    assert!(f.relative(1).unwrap().slope.is_none());
    assert!(f.widest().unwrap().1 < 0.15);
}

/// One visit a cell and no windows: the design fits every unit exactly, no degree of freedom
/// is left for an interval, and no cell gets a relative rate rather than an infinite one (a
/// matrix file holds no infinity).
#[test]
fn no_degree_of_freedom_gives_no_interval() {
    let cells: Vec<Cell> = TRUTH
        .iter()
        .enumerate()
        .map(|(i, (cpu, truth))| {
            let mut c = measured(*cpu, GIB, 100.0 * truth, None);
            c.visits
                .push(visit(i as u32 + 1, 100.0 * truth, 10.0 * i as f64, 0.01));
            c
        })
        .collect();
    let f = fitted(&cells, DEFAULT_READ_AT);
    assert_eq!(f.relative(0).unwrap().degrees_of_freedom, 0);
    assert!(f.relative(1).is_none());
    let rel = relative_rates(&cells, DEFAULT_READ_AT);
    assert!(rel[1].is_none() && rel[2].is_none());
}
