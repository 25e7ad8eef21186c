use super::*;
use crate::matrix::fixtures;
use crate::matrix::{LaunchRate, Throughput};

const REF_CPU: f64 = 2.0;
const MEM: u64 = 1 << 30;
/// Every measurement's own interval: ±1% (tight windows, so the spread between blocks rules).
const OWN: f64 = 0.01;

/// A measured cell at `cpu` with one launch per `(rate, start)`, each measured over 10 s.
fn measured(cpu: f64, launches: &[(f64, f64)]) -> Cell {
    let rates: Vec<LaunchRate> = launches
        .iter()
        .map(|&(r, s)| LaunchRate {
            samples_per_s: r,
            ci95_low: r * (1.0 - OWN),
            ci95_high: r * (1.0 + OWN),
            measured_unix_s: Some([s, s + 10.0]),
            left_out_unix_s: Vec::new(),
        })
        .collect();
    let mean = launches.iter().map(|l| l.0).sum::<f64>() / launches.len() as f64;
    let mut cell = fixtures::cell(cpu);
    cell.source = CellSource::Measured;
    cell.note = None;
    cell.measured_unix_s = Some([launches[0].1, launches[0].1 + 10.0]);
    cell.throughput = Some(Throughput {
        samples_per_s: mean,
        ci95_low: mean * 0.5,
        ci95_high: mean * 1.5,
        windows: 4,
        measured_s: 10.0,
        launches: if rates.len() > 1 { rates } else { Vec::new() },
    });
    cell
}

fn reference(rate: f64, start: f64) -> BlockReference {
    BlockReference {
        samples_per_s: rate,
        ci95_low: rate * (1.0 - OWN),
        ci95_high: rate * (1.0 + OWN),
        windows: 0,
        measured_unix_s: [start, start + 10.0],
    }
}

/// A visit on `launch` at `rate` (its own interval ±[`OWN`]) measured over [start, start + 10].
fn visit(launch: u32, rate: f64, start: f64) -> crate::matrix::Visit {
    fixtures::visit(launch, rate, start, OWN)
}

/// Block `index` spanning [start, start + 100): reference measured at its start (and at
/// start + 80 where `closing` is given).
fn block(index: u32, start: f64, opening: f64, closing: Option<f64>) -> SweepBlock {
    SweepBlock {
        index,
        params: BTreeMap::new(),
        reference_cpu: REF_CPU,
        reference_memory_bytes: MEM,
        span_unix_s: [start, start + 100.0],
        opening: Some(reference(opening, start)),
        closing: closing.map(|c| reference(c, start + 80.0)),
        drifted: false,
        disturbed: false,
    }
}

#[test]
fn a_cell_is_its_rate_over_its_own_blocks_reference() {
    let blocks = [block(0, 0.0, 200.0, None), block(1, 1000.0, 100.0, None)];
    // The host halved everything in the second block: the ratio is the same in both.
    let cells = [
        measured(REF_CPU, &[(200.0, 0.0), (100.0, 1000.0)]),
        measured(1.0, &[(120.0, 20.0), (60.0, 1020.0)]),
    ];
    let rel = relative_rates(&blocks, &cells);
    let top = rel[0].as_ref().unwrap();
    assert_eq!(
        (top.rate, top.ci95_low, top.ci95_high, top.blocks),
        (1.0, 1.0, 1.0, 2)
    );
    let one = rel[1].as_ref().unwrap();
    assert!((one.rate - 0.6).abs() < 1e-12, "{one:?}");
    assert_eq!(one.blocks, 2);
    // With no spread between blocks, only the windows are left: two ±1% measurements.
    let sd = 2f64.sqrt() * OWN / 1.96;
    let half = 12.706 * sd; // t(1) · sd · sqrt(2/2)
    assert!(
        (one.ci95_high / one.rate - half.exp()).abs() < 1e-3,
        "{one:?}"
    );
}

/// A measurement's interval says how many windows made it: its variance is its half-width
/// over Student's quantile for them, not the normal one (four windows read as normal would
/// floor every ratio 1.62 times wider than their standard error). Without the count recorded
/// (older matrices) the normal quantile stands.
#[test]
fn the_floor_is_the_windows_standard_error() {
    let half_width = |windows: u32| {
        let mut blocks = [block(0, 0.0, 200.0, None), block(1, 1000.0, 100.0, None)];
        for b in &mut blocks {
            b.opening.as_mut().unwrap().windows = windows;
        }
        let mut one = measured(1.0, &[(120.0, 20.0), (60.0, 1020.0)]);
        one.visits = [(120.0, 20.0), (60.0, 1020.0)]
            .iter()
            .map(|&(rate, start)| crate::matrix::Visit {
                windows,
                ..visit(1, rate, start)
            })
            .collect();
        let cells = [measured(REF_CPU, &[(200.0, 0.0), (100.0, 1000.0)]), one];
        let r = relative_rates(&blocks, &cells)[1].clone().unwrap();
        (r.ci95_high / r.rate).ln()
    };
    let (normal, four) = (half_width(0), half_width(4));
    let ratio = (four / normal) / (1.96 / t_975(3));
    assert!((ratio - 1.0).abs() < 1e-9, "{normal} {four}");
    // One window's interval came from its many reports: the normal quantile.
    assert_eq!(half_width(1), normal);
}

/// The reference fell from 100 to 80 through the block: a cell measured halfway is compared
/// with the reference as it was then (the geometric mean), so a linear drift cancels.
#[test]
fn the_reference_is_interpolated_between_opening_and_closing() {
    let blocks = [block(0, 0.0, 100.0, Some(80.0))];
    // Opening's middle at 5, closing's at 85: a cell whose middle is at 45 is halfway.
    let at_half = 0.5 * (100.0f64 * 80.0).sqrt();
    let cells = [
        measured(REF_CPU, &[(100.0, 0.0)]),
        measured(1.0, &[(at_half, 40.0)]),
    ];
    let rel = relative_rates(&blocks, &cells);
    assert!((rel[1].as_ref().unwrap().rate - 0.5).abs() < 1e-12);
}

/// Two cells over three blocks: the spread is pooled over both, with four degrees of freedom.
#[test]
fn the_interval_pools_the_spread_between_blocks_over_cells() {
    let blocks = [
        block(0, 0.0, 100.0, None),
        block(1, 1000.0, 100.0, None),
        block(2, 2000.0, 100.0, None),
    ];
    let a = [50.0, 55.0, 45.0];
    let b = [25.0, 24.0, 26.0];
    let cells = [
        measured(REF_CPU, &[(100.0, 0.0), (100.0, 1000.0), (100.0, 2000.0)]),
        measured(1.0, &[(a[0], 20.0), (a[1], 1020.0), (a[2], 2020.0)]),
        measured(0.5, &[(b[0], 40.0), (b[1], 1040.0), (b[2], 2040.0)]),
    ];
    let logs = |xs: &[f64]| xs.iter().map(|x| (x / 100.0f64).ln()).collect::<Vec<_>>();
    let ss = |xs: &[f64]| {
        let m = xs.iter().sum::<f64>() / 3.0;
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    let sd = ((ss(&logs(&a)) + ss(&logs(&b))) / 4.0).sqrt();
    let rel = relative_rates(&blocks, &cells);
    for (i, xs) in [(1, &a), (2, &b)] {
        let r = rel[i].as_ref().unwrap();
        let m = logs(xs).iter().sum::<f64>() / 3.0;
        assert!((r.rate - m.exp()).abs() < 1e-12);
        let half = 2.776 * sd * (2.0f64 / 3.0).sqrt();
        assert!(
            (r.ci95_high - (m + half).exp()).abs() < 1e-3 * r.rate,
            "{r:?}"
        );
        assert!(
            (r.ci95_low - (m - half).exp()).abs() < 1e-3 * r.rate,
            "{r:?}"
        );
        assert_eq!(r.blocks, 3);
    }
}

#[test]
fn a_drifted_block_is_left_out_and_counted() {
    let mut drifted = block(1, 1000.0, 100.0, Some(70.0));
    assert!(drifted.judge_drift(0.0));
    assert!(!block(0, 0.0, 100.0, Some(100.5)).judge_drift(0.0));
    drifted.drifted = true;
    let blocks = [block(0, 0.0, 100.0, None), drifted];
    let cells = [
        measured(REF_CPU, &[(100.0, 0.0), (100.0, 1000.0)]),
        measured(1.0, &[(50.0, 20.0), (20.0, 1020.0)]),
    ];
    let rel = relative_rates(&blocks, &cells);
    let one = rel[1].as_ref().unwrap();
    assert_eq!((one.rate, one.blocks, one.dropped_blocks), (0.5, 1, 1));
}

/// A block other processes disturbed (a hog took half the reference's CPUs, so the cell's
/// ratio doubled) is left out as a drifted one is, counted, named in the summary, and its
/// launch is the one reported left out.
#[test]
fn a_disturbed_block_is_left_out_and_its_launch_named() {
    let mut hogged = block(1, 1000.0, 50.0, None);
    hogged.disturbed = true;
    assert!(hogged.left_out() && !hogged.judge_drift(0.0));
    let blocks = [block(0, 0.0, 100.0, None), hogged];
    let visit = |launch: u32, rate: f64, start: f64| crate::matrix::Visit {
        disturbed: launch == 2,
        ..visit(launch, rate, start)
    };
    let mut low = measured(0.5, &[(25.0, 20.0), (25.0, 1020.0)]);
    low.visits = vec![visit(1, 25.0, 20.0), visit(2, 25.0, 1020.0)];
    let cells = [measured(REF_CPU, &[(100.0, 0.0), (50.0, 1000.0)]), low];
    let rel = relative_rates(&blocks, &cells);
    let r = rel[1].as_ref().unwrap();
    assert_eq!((r.rate, r.blocks, r.dropped_blocks), (0.25, 1, 1), "{r:?}");
    assert_eq!(left_out_launches(&blocks, &cells[1]), vec![2]);
    assert_eq!(
        ratios_by_launch(&blocks, &cells[1]),
        vec![(1, 0.25f64.ln())]
    );
    let mut with_rates = cells.clone();
    for (c, r) in with_rates.iter_mut().zip(rel) {
        c.relative = r;
    }
    let line = describe_relative(&with_rates, &blocks).unwrap();
    assert!(
        line.contains("1 block(s) dropped: other processes disturbed them"),
        "{line}"
    );
    // Every block dropped: no ratio at all, and the line says why instead of nothing.
    let mut all_out = blocks.to_vec();
    for b in &mut all_out {
        b.disturbed = true;
    }
    let none: Vec<Cell> = cells
        .iter()
        .cloned()
        .map(|c| Cell {
            relative: None,
            ..c
        })
        .collect();
    let line = describe_relative(&none, &all_out).unwrap();
    assert!(
        line.starts_with("no relative rates: all 2 block(s) dropped: other processes"),
        "{line}"
    );
    assert_eq!(describe_relative(&none, &[]), None);
}

/// A modelled cell at 1 CPU and less memory: the measured 1-CPU cell's relative rate, times the
/// model's ratio between the two.
#[test]
fn a_modelled_cell_scales_its_measured_cells_relative_rate() {
    let blocks = [block(0, 0.0, 100.0, None)];
    let mut modelled = measured(1.0, &[(30.0, 20.0)]);
    modelled.source = CellSource::Modelled;
    modelled.memory_bytes = MEM / 2;
    modelled.measured_unix_s = None;
    let cells = [
        measured(REF_CPU, &[(100.0, 0.0)]),
        measured(1.0, &[(60.0, 20.0)]),
        modelled,
    ];
    let rel = relative_rates(&blocks, &cells);
    let (m, r) = (rel[2].as_ref().unwrap(), rel[1].as_ref().unwrap());
    assert!((m.rate - 0.3).abs() < 1e-12, "{m:?}");
    assert!((m.ci95_low - r.ci95_low * 0.5).abs() < 1e-12);
}

#[test]
fn cells_outside_every_block_have_no_relative_rate() {
    let blocks = [block(0, 0.0, 100.0, None)];
    let cells = [measured(1.0, &[(60.0, 5000.0)]), fixtures::cell(1.0)];
    assert_eq!(relative_rates(&blocks, &cells), vec![None, None]);
    assert_eq!(relative_rates(&[], &cells), vec![None, None]);
}

proptest::proptest! {
    /// Whatever the host does to a whole block (every rate in it scaled alike), relative rates do
    /// not move; every interval holds its rate, is finite and positive.
    #[test]
    fn a_block_slowed_as_a_whole_changes_no_relative_rate(
        slow in proptest::collection::vec(0.2f64..3.0, 3),
        ratios in proptest::collection::vec(proptest::collection::vec(0.05f64..1.2, 3), 2),
    ) {
        let blocks: Vec<SweepBlock> = (0..3).map(|b| block(b, b as f64 * 1000.0, 100.0, None)).collect();
        let make = |scale: &[f64]| {
            let top: Vec<(f64, f64)> = (0..3).map(|b| (100.0 * scale[b], b as f64 * 1000.0)).collect();
            let mut cells = vec![measured(REF_CPU, &top)];
            for (i, r) in ratios.iter().enumerate() {
                let l: Vec<(f64, f64)> = (0..3)
                    .map(|b| (100.0 * r[b] * scale[b], b as f64 * 1000.0 + 20.0 * (i + 1) as f64))
                    .collect();
                cells.push(measured(1.0 / (i + 1) as f64, &l));
            }
            cells
        };
        let mut slowed_blocks = blocks.clone();
        for (b, s) in slowed_blocks.iter_mut().zip(&slow) {
            let o = b.opening.as_mut().unwrap();
            *o = reference(o.samples_per_s * s, o.measured_unix_s[0]);
        }
        let quiet = relative_rates(&blocks, &make(&[1.0; 3]));
        let slowed = relative_rates(&slowed_blocks, &make(&slow));
        for (q, s) in quiet.iter().zip(&slowed) {
            let (q, s) = (q.as_ref().unwrap(), s.as_ref().unwrap());
            proptest::prop_assert!((q.rate - s.rate).abs() < 1e-9 * q.rate);
            proptest::prop_assert!((q.ci95_high - s.ci95_high).abs() < 1e-9 * q.ci95_high);
            proptest::prop_assert!(s.ci95_low > 0.0 && s.ci95_high.is_finite());
            proptest::prop_assert!(s.holds(s.rate));
        }
    }
}

/// A cell visited in each of four blocks chained inside one launch: each visit is read against
/// its own block's reference, so a launch that slowed from block to block changes no ratio;
/// the interval is Student's over their spread (the only cell, its own is the pooled one).
#[test]
fn visits_are_read_against_their_own_blocks_and_make_their_own_spread() {
    let speeds = [1000.0, 900.0, 800.0, 700.0];
    let ratios = [0.50, 0.52, 0.48, 0.50];
    let mut cell = measured(1.0, &[(500.0, 0.0)]);
    cell.visits = (0..4)
        .map(|i| {
            let r = speeds[i] * ratios[i];
            visit(1, r, 100.0 * i as f64 + 40.0)
        })
        .collect();
    let blocks: Vec<SweepBlock> = (0..4)
        .map(|i| block(i as u32, 100.0 * i as f64, speeds[i], Some(speeds[i])))
        .collect();
    let r = relative_rates(&blocks, std::slice::from_ref(&cell))[0]
        .clone()
        .unwrap();
    let logs: Vec<f64> = ratios.iter().map(|x: &f64| x.ln()).collect();
    let m = logs.iter().sum::<f64>() / 4.0;
    let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 3.0).sqrt();
    assert!((r.rate - m.exp()).abs() < 1e-12, "{r:?}");
    assert_eq!(r.blocks, 4);
    let half = t_975(3) * sd * (2.0f64 / 4.0).sqrt();
    assert!((r.ci95_high - (m + half).exp()).abs() < 1e-12, "{r:?}");
    let by_launch = ratios_by_launch(&blocks, &cell);
    assert_eq!(by_launch.len(), 4);
    assert!(by_launch.iter().all(|(l, _)| *l == 1));
}

/// The same cell on two launches of two blocks each, the launches 10% apart and their blocks
/// within 1%: another sweep's mean lands where another pair of launches puts it, so the
/// interval is Student's over the two launch means (one degree of freedom), not over four
/// blocks as if each were a fresh start.
#[test]
fn blocks_of_one_launch_are_not_independent_starts() {
    let ratios = [(1, 0.50), (1, 0.505), (2, 0.55), (2, 0.555)];
    let mut cell = measured(1.0, &[(500.0, 0.0)]);
    cell.visits = (ratios.iter().enumerate())
        .map(|(i, &(launch, ratio))| {
            let r = 1000.0 * ratio;
            visit(launch, r, 100.0 * i as f64 + 40.0)
        })
        .collect();
    let blocks: Vec<SweepBlock> = (0..4)
        .map(|i| block(i as u32, 100.0 * i as f64, 1000.0, Some(1000.0)))
        .collect();
    let r = relative_rates(&blocks, std::slice::from_ref(&cell))[0]
        .clone()
        .unwrap();
    let logs: Vec<f64> = ratios.iter().map(|x| x.1.ln()).collect();
    let means = [0.5 * (logs[0] + logs[1]), 0.5 * (logs[2] + logs[3])];
    let m = 0.5 * (means[0] + means[1]);
    let launch_sd = ((means[0] - m).powi(2) + (means[1] - m).powi(2)).sqrt();
    let half = (r.ci95_high / r.rate).ln();
    let expected = t_975(1) * launch_sd * (2.0f64 / 2.0).sqrt();
    assert!((half - expected).abs() < 1e-9, "{half} {expected}");
    // The blocks as units: less than a third as wide.
    let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 3.0).sqrt();
    assert!(t_975(3) * sd * (2.0f64 / 4.0).sqrt() < half / 3.0, "{r:?}");
}

/// A cell at half a core whose visits swing with the host's speed on its CPU (the probe's),
/// beside a reference measured at the quiet speed: read at the quiet host's speed, the
/// ratios lose the swing, so the interval is far narrower than the raw one, centred where the
/// quiet visits lie; the slope, its level's, is one.
#[test]
fn the_host_speed_is_taken_out_of_the_ratios_where_a_probe_measured_it() {
    use crate::matrix::visits::HostSpeed;
    // The host's speed in each of six blocks, and the job's ratio to the reference at the
    // quiet speed (1.0), off by a small noise of its own.
    let speeds = [1.0, 0.8, 0.95, 0.7, 1.0, 0.85];
    let noise = [1.0, 1.004, 0.996, 1.002, 0.998, 1.0];
    let visit = |i: usize, rate: f64, speed: f64| crate::matrix::Visit {
        host: Some(HostSpeed {
            speed: 3e8 * speed,
            // Windows that move with the speed at a slope of one.
            windows: [0.97, 1.03, 1.0]
                .iter()
                .map(|w| [rate * w, 3e8 * speed * w])
                .collect(),
            log_variance: 0.0,
        }),
        ..visit(1, rate, 100.0 * i as f64 + 40.0)
    };
    let mut cell = measured(0.5, &[(250.0, 0.0)]);
    cell.visits = (0..6)
        .map(|i| visit(i, 250.0 * speeds[i] * noise[i], speeds[i]))
        .collect();
    let mut reference_cell = measured(REF_CPU, &[(1000.0, 0.0)]);
    reference_cell.memory_bytes = MEM;
    cell.memory_bytes = MEM;
    // The reference's visits open and close each block, at the quiet speed.
    let reference_visit = |start: f64| crate::matrix::Visit {
        host: Some(HostSpeed {
            speed: 3e8,
            windows: Vec::new(),
            log_variance: 0.0,
        }),
        ..self::visit(1, 1000.0, start)
    };
    reference_cell.visits = (0..6)
        .flat_map(|i| [100.0 * i as f64, 100.0 * i as f64 + 80.0])
        .map(reference_visit)
        .collect();
    let blocks: Vec<SweepBlock> = (0..6)
        .map(|i| block(i as u32, 100.0 * i as f64, 1000.0, Some(1000.0)))
        .collect();
    let cells = [reference_cell, cell.clone()];
    let adjusted = relative_rates(&blocks, &cells)[1].clone().unwrap();
    let mut raw_cell = cell.clone();
    raw_cell.visits.iter_mut().for_each(|v| v.host = None);
    let raw = relative_rates(&blocks, &[cells[0].clone(), raw_cell])[1]
        .clone()
        .unwrap();
    assert!(raw.host_slope.is_none() && raw.raw_rate.is_none());
    let slope = adjusted.host_slope.expect("adjusted");
    assert_eq!(slope, 1.0, "{adjusted:?}");
    assert_eq!(adjusted.host_model, Some(HostModel::Proportional));
    assert!((adjusted.raw_rate.unwrap() - raw.rate).abs() < 1e-12 * raw.rate);
    assert!(adjusted.host_explained.unwrap() > 0.95, "{adjusted:?}");
    assert!((adjusted.rate - 0.25).abs() < 0.25 * 0.01, "{adjusted:?}");
    assert!(raw.rate < 0.23, "{raw:?}");
    assert!(
        adjusted.half_width() < raw.half_width() / 3.0,
        "adjusted {adjusted:?}, raw {raw:?}"
    );
    // Never below what the quiet-speed estimate's own variance allows.
    assert!(adjusted.half_width() > 0.0);
    // The live check reads the raw ratios.
    let by_launch = ratios_by_launch(&blocks, &cells[1]);
    assert_eq!(by_launch.len(), 6);
    // A point measured later, in a block of its own on a faster host (a resumed sweep's),
    // leaves the cell's relative rate as it was: its quiet level is its own blocks'.
    let mut later = measured(1.0, &[(600.0, 600.0)]);
    later.memory_bytes = MEM;
    later.visits = vec![visit(6, 600.0, 2.0)];
    let mut more_blocks = blocks.clone();
    more_blocks.push(block(6, 600.0, 1000.0, Some(1000.0)));
    let mut reference_cell = cells[0].clone();
    reference_cell.visits.push(reference_visit(600.0));
    reference_cell.visits.push(reference_visit(680.0));
    let resumed = relative_rates(&more_blocks, &[reference_cell, cells[1].clone(), later]);
    assert_eq!(resumed[1].as_ref().map(|r| r.rate), Some(adjusted.rate));
}

/// The host's speed at each block's opening, cell and closing, in spells of up to 40%.
const SPELLS: [[f64; 3]; 5] = [
    [1.0, 0.7, 0.9],
    [0.8, 1.0, 1.0],
    [0.95, 0.6, 0.7],
    [1.0, 0.9, 0.8],
    [0.7, 0.75, 1.0],
];

/// `cells` as a sweep without the probe would have recorded them.
fn without_probe(cells: &[Cell]) -> Vec<Cell> {
    let mut bare = cells.to_vec();
    (bare.iter_mut().flat_map(|c| &mut c.visits)).for_each(|v| v.host = None);
    bare
}

/// A block of a sweep whose cell (half a core) and reference (two cores) both run at a rate
/// proportional to the host's speed on their CPUs, the reference measured at the block's
/// opening (at `100 i`) and closing (`100 i + 80`), the cell between.
fn proportional_sweep(speeds: &[[f64; 3]]) -> (Vec<SweepBlock>, Vec<Cell>) {
    use crate::matrix::visits::HostSpeed;
    let at = |rate: f64, speed: f64, start: f64| crate::matrix::Visit {
        host: Some(HostSpeed {
            speed: 3e8 * speed,
            windows: Vec::new(),
            log_variance: 0.0,
        }),
        ..visit(1, rate * speed, start)
    };
    let blocks: Vec<SweepBlock> = (speeds.iter().enumerate())
        .map(|(i, [o, _, c])| {
            let start = 100.0 * i as f64;
            block(i as u32, start, 1000.0 * o, Some(1000.0 * c))
        })
        .collect();
    let mut reference = measured(REF_CPU, &[(1000.0, 0.0)]);
    let mut cell = measured(0.5, &[(250.0, 0.0)]);
    for (i, [o, v, c]) in speeds.iter().enumerate() {
        let start = 100.0 * i as f64;
        reference.visits.push(at(1000.0, *o, start));
        reference.visits.push(at(1000.0, *c, start + 80.0));
        cell.visits.push(at(250.0, *v, start + 40.0));
    }
    reference.memory_bytes = MEM;
    cell.memory_bytes = MEM;
    (blocks, vec![reference, cell])
}

proptest::proptest! {
    /// Whatever the host's speed on the job's CPUs at each measurement, a job whose rate is
    /// proportional to it on both sides of every ratio gets its true relative rate, once the
    /// probe's speed is taken out of both sides.
    #[test]
    fn both_sides_read_at_the_quiet_host_give_the_true_ratio(
        speeds in proptest::collection::vec(
            proptest::array::uniform3(0.5f64..1.0), 4..8),
    ) {
        let (blocks, cells) = proportional_sweep(&speeds);
        let r = relative_rates(&blocks, &cells)[1].clone().expect("a relative rate");
        proptest::prop_assert!((r.rate - 0.25).abs() < 1e-6 * 0.25, "{:?}", r);
        proptest::prop_assert!(r.holds(0.25));
    }
}

/// The same sweep read raw (no probe speeds) is off by the speeds' ratios, and its interval
/// wider than the adjusted one's.
#[test]
fn the_same_sweep_read_raw_keeps_the_hosts_swing() {
    let (blocks, cells) = proportional_sweep(&SPELLS);
    let adjusted = relative_rates(&blocks, &cells)[1].clone().unwrap();
    let raw = relative_rates(&blocks, &without_probe(&cells))[1]
        .clone()
        .unwrap();
    assert!((adjusted.rate - 0.25).abs() < 1e-9, "{adjusted:?}");
    assert!((raw.rate - 0.25).abs() > 0.005, "{raw:?}");
    assert!(
        adjusted.half_width() < raw.half_width() / 3.0,
        "{adjusted:?} {raw:?}"
    );
}

/// At the quiet host's speed the absolute rates of a job proportional to the host's speed
/// are those of the quiet host itself, whatever each visit's spell: the cell's and the
/// reference's stand in the relative rate's ratio, and each is its rate per unit of speed
/// times the quiet speed.
#[test]
fn absolute_rates_at_the_quiet_host_take_the_spells_out() {
    let (blocks, mut cells) = proportional_sweep(&SPELLS);
    // Each cell's rate, its visits' geometric mean, as the spells left it.
    for c in &mut cells {
        let logs: Vec<f64> = c.visits.iter().map(|v| v.samples_per_s.ln()).collect();
        c.throughput.as_mut().unwrap().samples_per_s = mean(&logs).exp();
    }
    let quiet = quiet_host_rates(&blocks, &cells);
    let (reference, cell) = (quiet[0].expect("read"), quiet[1].expect("read"));
    assert!((cell / reference - 0.25).abs() < 1e-9, "{cell} {reference}");
    // The quiet speed is the 90th percentile of the speeds (in the fixture's unit, 3e8).
    let mut logs: Vec<f64> = SPELLS.iter().flatten().map(|s| s.ln()).collect();
    logs.sort_by(f64::total_cmp);
    let q = crate::stats::interpolated_percentile(&logs, 90.0).exp();
    assert!((cell - 250.0 * q).abs() < 1e-9 * cell, "{cell} {q}");
    let raw = cells[1].samples_per_s().unwrap();
    assert!(
        (raw - 250.0 * q).abs() > 0.05 * raw,
        "the spells moved the raw rate: {raw}"
    );
    // Without the probe's speeds nothing is read.
    let bare = without_probe(&cells);
    assert!(quiet_host_rates(&blocks, &bare).iter().all(Option::is_none));
}

/// A relaunching sweep measures a point once a pass: two passes leave each level two visits,
/// too few for a slope of its own, and the level takes the fit of all the sweep's levels.
#[test]
fn a_level_with_too_few_visits_takes_the_sweeps_fit() {
    let (blocks, cells) = proportional_sweep(&[[1.0, 0.7, 0.9], [0.8, 1.0, 0.6]]);
    assert_eq!(cells[1].visits.len(), 2);
    let r = relative_rates(&blocks, &cells)[1]
        .clone()
        .expect("a relative rate");
    assert!(
        matches!(
            r.host_model,
            Some(HostModel::Proportional | HostModel::Fitted)
        ),
        "{r:?}"
    );
    assert!((r.rate - 0.25).abs() < 1e-6, "{r:?}");
}
