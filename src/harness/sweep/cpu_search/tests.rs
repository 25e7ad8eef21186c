//! The searches on curves: exact paths, invariants (property tests), and the comparison of the
//! knee search with Synergy's rule on Synergy's model zoo and on synthetic curves. The table in
//! docs/findings/cpu-search.md comes from `cargo test --lib cpu_search -- --ignored --nocapture`.

use super::*;
use proptest::prelude::*;
use std::path::Path;

/// Runs a search to the end on `curve`, checking on every step what the sweep relies on: inside
/// `[min, max]`, never a level twice, at most `at_most()` levels. Returns the levels in order.
fn run(search: &CpuSearch, curve: &dyn Fn(f64) -> f64) -> Vec<Measured> {
    let mut measured: Vec<Measured> = Vec::new();
    loop {
        match search.next(&measured) {
            Next::Done => return measured,
            Next::Measure(cpu) => {
                assert!(
                    milli(cpu) >= milli(search.min) && milli(cpu) <= milli(search.max),
                    "{cpu} outside [{}, {}]",
                    search.min,
                    search.max
                );
                assert!(
                    measured.iter().all(|m| milli(m.cpu) != milli(cpu)),
                    "{cpu} proposed twice: {measured:?}"
                );
                assert!(
                    measured.len() < search.at_most(),
                    "more than {} levels: {measured:?}",
                    search.at_most()
                );
                measured.push(Measured {
                    cpu,
                    rate: curve(cpu),
                });
            }
        }
    }
}

fn levels(measured: &[Measured]) -> Vec<f64> {
    measured.iter().map(|m| m.cpu).collect()
}

/// Piecewise linear through `(cpu, rate)` table rows (a dense ground truth from a table).
fn table_curve(rows: Vec<(f64, f64)>) -> impl Fn(f64) -> f64 {
    let points: Vec<Measured> = rows
        .into_iter()
        .map(|(cpu, rate)| Measured { cpu, rate })
        .collect();
    move |c| reconstruct(&points, c)
}

/// The levels a scheduler can allocate in `[min, max]`: the ends and the search's grid.
fn grid(search: &CpuSearch) -> Vec<f64> {
    let mut out = vec![search.min, search.max];
    let mut c = search.min;
    while let Some(next) = search.granularity.snap(c, c, search.max) {
        // snap() gives the level nearest c above it: walk up the grid.
        out.push(next);
        c = next;
    }
    out
}

/// Largest gap between the reconstructed and the true curve on the grid, relative to the
/// true curve's best there.
fn error(search: &CpuSearch, measured: &[Measured], curve: &dyn Fn(f64) -> f64) -> f64 {
    let g = grid(search);
    let best = g.iter().map(|&c| curve(c)).fold(0.0, f64::max);
    g.iter()
        .map(|&c| (reconstruct(measured, c) - curve(c)).abs())
        .fold(0.0, f64::max)
        / best
}

/// The fewest levels of the grid, both ends included, whose reconstruction is within
/// `tolerance` of the curve's best everywhere on the grid: what a search that knew the curve in
/// advance would measure (a lower bound for every search that measures both ends).
fn fewest_levels(search: &CpuSearch, curve: &dyn Fn(f64) -> f64) -> usize {
    let mut g = grid(search);
    g.sort_by(f64::total_cmp);
    g.dedup_by(|a, b| milli(*a) == milli(*b));
    let y: Vec<f64> = g.iter().map(|&c| curve(c)).collect();
    let allowed = search.tolerance * y.iter().fold(0.0, |m, &r| f64::max(m, r)) + 1e-9;
    let chord_fits = |i: usize, j: usize| {
        (i..=j).all(|k| {
            let t = (g[k] - g[i]) / (g[j] - g[i]);
            (y[i] + (y[j] - y[i]) * t - y[k]).abs() <= allowed
        })
    };
    // fewest[j]: the fewest levels covering g[0..=j] within the tolerance, ending at g[j].
    let mut fewest = vec![usize::MAX; g.len()];
    fewest[0] = 1;
    for j in 1..g.len() {
        fewest[j] = (0..j)
            .filter(|&i| fewest[i] != usize::MAX && chord_fits(i, j))
            .map(|i| fewest[i] + 1)
            .min()
            .unwrap_or(usize::MAX);
    }
    fewest[g.len() - 1]
}

#[test]
fn the_fewest_levels_are_those_of_the_curves_corners() {
    let (search, _) = rules(1.0, 24.0, 1.0);
    assert_eq!(fewest_levels(&search, &|_| 5.0), 2, "flat: the ends");
    assert_eq!(
        fewest_levels(&search, &|c: f64| (10.0 * c).min(60.0)),
        3,
        "linear then flat: the ends and the knee"
    );
    // Two corners, each further from the chord than the tolerance.
    let two_bends = |c: f64| (10.0 * c).min(40.0 + 2.0 * c).min(60.0);
    assert_eq!(fewest_levels(&search, &two_bends), 4);
}

#[test]
fn snapping_follows_the_granularity() {
    let auto = Granularity::Auto;
    assert_eq!(auto.snap(0.6, 0.5, 16.0), Some(0.5 + 0.25));
    assert_eq!(auto.snap(1.9, 0.5, 16.0), Some(2.0), "2 is a whole core");
    assert_eq!(auto.snap(6.4, 0.5, 16.0), Some(6.0));
    assert_eq!(auto.snap(6.5, 0.5, 16.0), Some(7.0), "ties go up");
    assert_eq!(auto.snap(3.0, 0.5, 0.75), None, "nothing strictly inside");
    assert_eq!(auto.snap(0.1, 0.5, 16.0), Some(0.75), "clamped inside");
    assert_eq!(Granularity::Every(0.5).snap(1.3, 1.0, 1.5), None);
    let tenth = Granularity::Every(0.1).snap(0.33, 0.2, 1.0).unwrap();
    assert!((tenth - 0.3).abs() < 1e-12, "{tenth}");
}

#[test]
fn a_flat_curve_takes_its_two_ends() {
    let search = CpuSearch::knee(0.5, 16.0);
    let m = run(&search, &|_| 800.0);
    assert_eq!(levels(&m), vec![16.0, 0.5]);
    assert_eq!(knee(&m, search.tolerance), Some(0.5));
}

#[test]
fn linear_then_flat_finds_the_knee_from_the_ends() {
    // 100 samples/s per core up to 6 cores. The first probe aims at 0.5 x 600 / 50 = 6 cores.
    let search = CpuSearch::knee(0.5, 16.0);
    let curve = |c: f64| (100.0 * c).min(600.0);
    let m = run(&search, &curve);
    assert_eq!(levels(&m)[..3], [16.0, 0.5, 6.0]);
    assert!(m.len() <= 4, "{m:?}");
    assert!(error(&search, &m, &curve) <= search.tolerance);
    let k = knee(&m, search.tolerance).unwrap();
    assert!((k - 5.7).abs() < 0.01, "knee {k}");
}

#[test]
fn synergy_halves_where_flat_and_steps_down_where_sensitive() {
    // Synergy's own example: 24 cores, one GPU. Flat: halve until below 1 core.
    let flat = CpuSearch::synergy(1.0, 24.0, 1);
    assert_eq!(
        levels(&run(&flat, &|_| 100.0)),
        vec![24.0, 12.0, 6.0, 3.0, 1.5]
    );
    // Zoo alexnet: flat down to 9 cores, then each level loses more than 10%.
    let alexnet = table_curve(vec![
        (1.0, 256.0),
        (2.0, 563.0),
        (3.0, 853.0),
        (4.0, 1067.0),
        (5.0, 1306.0),
        (6.0, 1493.0),
        (9.0, 1707.0),
        (24.0, 1707.0),
    ]);
    assert_eq!(
        levels(&run(&flat, &alexnet)),
        vec![24.0, 12.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    );
    // Four GPUs step down by four cores.
    let four = CpuSearch::synergy(1.0, 24.0, 4);
    assert_eq!(
        levels(&run(&four, &|c: f64| c.min(20.0))),
        vec![24.0, 12.0, 8.0, 4.0]
    );
    // A CPU-only job steps by one core: on two cores a CPU-bound job gets 2 and 1.
    let cpu_only = CpuSearch::synergy(0.25, 2.0, 0);
    assert_eq!(levels(&run(&cpu_only, &|c: f64| c)), vec![2.0, 1.0]);
    assert_eq!(levels(&run(&cpu_only, &|_| 5.0)), vec![2.0, 1.0, 0.5, 0.25]);
}

#[test]
fn a_search_resumes_from_any_levels_already_measured() {
    let curve = |c: f64| 300.0 * c / (c + 2.0);
    for search in [CpuSearch::knee(0.5, 16.0), CpuSearch::synergy(1.0, 16.0, 1)] {
        let full = run(&search, &curve);
        for k in 0..full.len() {
            // The rest of the search does not depend on how the first k levels were obtained:
            // shuffled, or with levels outside the range and repeats mixed in.
            let mut prefix: Vec<Measured> = full[..k].iter().rev().copied().collect();
            prefix.push(Measured {
                cpu: 32.0,
                rate: 1.0,
            });
            prefix.extend(full[..k].iter().copied());
            assert_eq!(
                search.next(&prefix),
                Next::Measure(full[k].cpu),
                "{:?} after {k}",
                search.rule
            );
        }
        assert_eq!(search.next(&full), Next::Done);
    }
}

#[test]
fn failed_levels_count_as_zero_and_end_a_search_that_measures_nothing() {
    let search = CpuSearch::knee(0.5, 4.0);
    let m = run(&search, &|_| 0.0);
    assert_eq!(levels(&m), vec![4.0, 0.5]);
    let m = run(&search, &|c| if c < 1.0 { 0.0 } else { 100.0 });
    assert!(m.len() <= search.at_most());
    let k = knee(&m, search.tolerance).unwrap();
    assert!((0.5..=1.0).contains(&k), "{m:?}");
    assert_eq!(CpuSearch::knee(2.0, 2.0).at_most(), 1);
    assert_eq!(levels(&run(&CpuSearch::knee(2.0, 2.0), &|c| c)), vec![2.0]);
}

#[test]
fn reconstruction_is_linear_between_levels_and_to_zero_below() {
    let m = [
        Measured {
            cpu: 2.0,
            rate: 100.0,
        },
        Measured {
            cpu: 4.0,
            rate: 200.0,
        },
    ];
    assert_eq!(reconstruct(&m, 3.0), 150.0);
    assert_eq!(reconstruct(&m, 1.0), 50.0);
    assert_eq!(reconstruct(&m, 8.0), 200.0);
    assert_eq!(knee(&m, 0.1), Some(3.6));
}

/// A non-decreasing curve: piecewise linear through random non-negative increments at random
/// levels, flat pieces and jumps included.
fn monotone_curve() -> impl Strategy<Value = Vec<(f64, f64)>> {
    proptest::collection::vec((0.01f64..4.0, 0.0f64..300.0), 1..8).prop_map(|steps| {
        let mut rows = vec![(0.0, 0.0)];
        let (mut c, mut r) = (0.0, 0.0);
        for (dc, dr) in steps {
            c += dc;
            r += dr;
            rows.push((c, r));
        }
        rows
    })
}

fn granularity() -> impl Strategy<Value = Granularity> {
    prop_oneof![
        Just(Granularity::Auto),
        (1u32..8).prop_map(|q| Granularity::Every(f64::from(q) * 0.25)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Both rules stay in range, never repeat a level and end within their bound (checked on
    /// every step by `run`), on any non-decreasing curve.
    #[test]
    fn searches_stay_in_range_and_terminate(
        rows in monotone_curve(),
        min in 0.05f64..2.0,
        span in 0.0f64..30.0,
        tolerance in 0.01f64..0.3,
        gran in granularity(),
        max_points in 2usize..16,
        gpus in 0u32..9,
    ) {
        let curve = table_curve(rows);
        let knee_search = CpuSearch {
            tolerance,
            granularity: gran,
            max_points,
            ..CpuSearch::knee(min, min + span)
        };
        let m = run(&knee_search, &curve);
        prop_assert!(!m.is_empty() && m.len() <= max_points.max(1));
        let synergy = CpuSearch { tolerance, ..CpuSearch::synergy(min, min + span, gpus) };
        let m = run(&synergy, &curve);
        prop_assert!(!m.is_empty() && m.len() <= synergy.at_most());
    }

    /// On linear-then-flat curves (rate `a + s c` up to the knee, then flat) the search's knee
    /// is where the true curve reaches (1 - tolerance) of its best, to within the CPU that the
    /// tolerance is worth on the rising part plus one grid spacing; and the reconstruction is
    /// within the tolerance on the grid.
    #[test]
    fn the_knee_of_a_linear_then_flat_curve_is_found(
        min in 0.25f64..2.0,
        span in 1.0f64..30.0,
        knee_at in 0.0f64..1.2,
        intercept in 0.0f64..0.7,
        tolerance in 0.02f64..0.2,
        gran in granularity(),
    ) {
        let max = min + span;
        let search = CpuSearch { tolerance, granularity: gran, ..CpuSearch::knee(min, max) };
        let corner = min + knee_at * span;
        let best = 1000.0;
        let a = intercept * best * (corner / max).min(1.0);
        let s = (best - a) / corner;
        let curve = move |c: f64| (a + s * c).min(best);
        let m = run(&search, &curve);
        prop_assert!(m.len() < search.max_points, "hit the cap: {:?}", m);
        let top = curve(max);
        let truth = (((1.0 - tolerance) * top - a) / s).max(min);
        let found = knee(&m, tolerance).unwrap();
        let slack = tolerance * top / s + search.granularity.spacing_at(truth);
        prop_assert!((found - truth).abs() <= slack,
            "knee {found} vs {truth} (slack {slack}): {m:?}");
        prop_assert!(error(&search, &m, &curve) <= tolerance + 1e-9, "{:?}", m);
    }
}

/// One curve set's totals for one rule.
#[derive(Default, Clone, Copy)]
struct Tally {
    curves: usize,
    points: usize,
    max_error: f64,
    within_5pct: usize,
}

impl Tally {
    fn add(&mut self, search: &CpuSearch, curve: &dyn Fn(f64) -> f64) -> (usize, f64) {
        let m = run(search, curve);
        let e = error(search, &m, curve);
        self.curves += 1;
        self.points += m.len();
        self.max_error = self.max_error.max(e);
        self.within_5pct += usize::from(e <= 0.05 + 1e-9);
        (m.len(), e)
    }

    fn mean_points(&self) -> f64 {
        self.points as f64 / self.curves as f64
    }
}

/// Synergy's zoo CPU curves: per-GPU samples/s of one-GPU jobs at 62.5 GB, levels 1..24.
fn zoo_curves() -> Vec<(String, Vec<(f64, f64)>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("matrices/zoo");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("matrices/zoo")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let m = crate::matrix::load_matrix(path).expect("zoo matrix");
            let rows = m
                .cells
                .iter()
                .filter(|c| c.memory_bytes == 62_500_000_000)
                .map(|c| (c.cpu, c.samples_per_s().expect("zoo cells have rates")))
                .collect();
            (m.header.job.name, rows)
        })
        .collect()
}

/// Deterministic pseudo-random numbers in [0, 1) (splitmix64), so the synthetic set is fixed.
struct Random(u64);
impl Random {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Log-uniform in [lo, hi].
    fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.next() * (hi.ln() - lo.ln())).exp()
    }
}

type Curve = Box<dyn Fn(f64) -> f64>;

/// Synthetic curve families over 0.5..16 cores, `n` curves each, best rate 1000.
fn synthetic(n: usize) -> Vec<(&'static str, Vec<Curve>)> {
    let mut rng = Random(1);
    let b = 1000.0;
    let mut families: Vec<(&'static str, Vec<Curve>)> = vec![
        ("linear through 0, then flat", vec![]),
        ("linear with intercept, then flat", vec![]),
        ("saturating b c/(c+K)", vec![]),
        ("saturating b (1-exp(-c/T))", vec![]),
    ];
    for _ in 0..n {
        let k = rng.log_uniform(0.5, 19.2);
        families[0]
            .1
            .push(Box::new(move |c: f64| (b * c / k).min(b)));
        let (k, a) = (rng.log_uniform(0.5, 19.2), b * (0.1 + 0.5 * rng.next()));
        families[1]
            .1
            .push(Box::new(move |c: f64| (a + (b - a) * c / k).min(b)));
        let half = rng.log_uniform(0.1, 8.0);
        families[2]
            .1
            .push(Box::new(move |c: f64| b * c / (c + half)));
        let t = rng.log_uniform(0.1, 6.0);
        families[3]
            .1
            .push(Box::new(move |c: f64| b * (1.0 - (-c / t).exp())));
    }
    families
}

/// The knee search on levels every `step` cores over `min..max`, and Synergy's rule for a
/// one-GPU job over the same range, judged on the same grid.
fn rules(min: f64, max: f64, step: f64) -> (CpuSearch, CpuSearch) {
    let knee_search = CpuSearch {
        granularity: Granularity::Every(step),
        ..CpuSearch::knee(min, max)
    };
    let synergy = CpuSearch {
        granularity: knee_search.granularity,
        ..CpuSearch::synergy(min, max, 1)
    };
    (knee_search, synergy)
}

/// Whole-core levels over the zoo's 1..24 cores.
fn zoo_rules() -> (CpuSearch, CpuSearch) {
    rules(1.0, 24.0, 1.0)
}

/// Quarter-core levels over 0.5..16 cores.
fn synthetic_rules() -> (CpuSearch, CpuSearch) {
    rules(0.5, 16.0, 0.25)
}

#[test]
fn the_knee_search_is_accurate_with_fewer_points_than_synergy_where_curves_have_a_knee() {
    let (knee_search, synergy) = zoo_rules();
    let (mut k, mut s) = (Tally::default(), Tally::default());
    for (name, rows) in zoo_curves() {
        let curve = table_curve(rows);
        let (_, e) = k.add(&knee_search, &curve);
        assert!(e <= 0.05, "{name}: knee search error {e:.3}");
        s.add(&synergy, &curve);
    }
    assert_eq!(k.curves, 12);
    assert!(
        k.points * 4 <= s.points * 3,
        "zoo: {} vs {} points",
        k.points,
        s.points
    );
    assert!(
        s.max_error > 0.1,
        "Synergy's rule misses 1 core on flat curves"
    );
    // Half of Synergy's levels within 5% is out of reach of any search that measures both ends:
    // even knowing the curves, that takes more levels than half of Synergy's. The knee search
    // stays within 1.5x of that floor.
    let fewest: usize = zoo_curves()
        .into_iter()
        .map(|(_, rows)| fewest_levels(&knee_search, &table_curve(rows)))
        .sum();
    assert!(fewest * 2 > s.points, "{fewest} vs {}", s.points);
    assert!(k.points * 2 <= fewest * 3, "{} vs {fewest}", k.points);

    let (knee_search, synergy) = synthetic_rules();
    for (family, curves) in synthetic(100) {
        let (mut k, mut s) = (Tally::default(), Tally::default());
        for curve in &curves {
            k.add(&knee_search, curve);
            s.add(&synergy, curve);
        }
        assert_eq!(
            k.within_5pct, k.curves,
            "{family}: max error {}",
            k.max_error
        );
        if family.ends_with("then flat") {
            assert!(
                k.points * 4 <= s.points * 3,
                "{family}: {} vs {} points",
                k.points,
                s.points
            );
        }
    }
}

/// Prints the comparison table of docs/findings/cpu-search.md:
/// `cargo test --lib cpu_search -- --ignored --nocapture`.
#[test]
#[ignore = "prints the comparison table for the docs"]
fn print_comparison_with_synergy() {
    let (knee_search, synergy) = zoo_rules();
    println!("Zoo (per-GPU samples/s at 62.5 GB, one-GPU jobs, 1..24 cores, whole-core grid)\n");
    println!(
        "| model | knee: levels | knee: error | Synergy: levels | Synergy: error | fewest possible |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let mut fewest = 0;
    let (mut k, mut s) = (Tally::default(), Tally::default());
    for (name, rows) in zoo_curves() {
        let curve = table_curve(rows);
        let (kn, ke) = k.add(&knee_search, &curve);
        let (sn, se) = s.add(&synergy, &curve);
        let f = fewest_levels(&knee_search, &curve);
        fewest += f;
        println!(
            "| {name} | {kn} | {:.1}% | {sn} | {:.1}% | {f} |",
            ke * 100.0,
            se * 100.0
        );
    }
    println!(
        "| **all 12** | **{}** | **{:.1}%** | **{}** | **{:.1}%** | **{fewest}** |",
        k.points,
        k.max_error * 100.0,
        s.points,
        s.max_error * 100.0
    );
    let (knee_search, synergy) = synthetic_rules();
    println!(
        "\nSynthetic (0.5..16 cores, quarter-core grid, 100 curves a family; mean levels, largest error, curves within 5%)\n"
    );
    println!(
        "| family | tolerance | knee: levels | knee: error | knee: within 5% | Synergy: levels | Synergy: error | Synergy: within 5% | fewest possible |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (family, curves) in synthetic(100) {
        for tolerance in [0.05, 0.10] {
            let search = CpuSearch {
                tolerance,
                ..knee_search.clone()
            };
            let (mut k, mut s) = (Tally::default(), Tally::default());
            let mut fewest = 0;
            for curve in &curves {
                k.add(&search, curve);
                s.add(&synergy, curve);
                fewest += fewest_levels(&search, curve);
            }
            println!(
                "| {family} | {tolerance} | {:.2} | {:.1}% | {} | {:.2} | {:.1}% | {} | {:.2} |",
                k.mean_points(),
                k.max_error * 100.0,
                k.within_5pct,
                s.mean_points(),
                s.max_error * 100.0,
                s.within_5pct,
                fewest as f64 / curves.len() as f64
            );
        }
    }
}

#[test]
fn the_prediction_search_measures_the_top_then_what_the_library_cannot_tell() {
    let zoo = crate::predict::Library::zoo();
    let truth = |name: &str| {
        let job = zoo.jobs().iter().find(|j| j.name == name).unwrap().clone();
        move |c: f64| job.curve.at(c.ln()).exp()
    };
    let levels = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 9.0, 12.0, 24.0];
    for (name, at_most) in [("bert", 2), ("resnet50", 9)] {
        let rate = truth(name);
        let search = CpuSearch::predict(&levels, zoo.without(name), 0.05);
        assert_eq!(search.at_most(), 9);
        let measured = run(&search, &rate);
        assert_eq!(measured[0].cpu, 24.0, "{name}: the top first");
        assert!(measured.len() <= at_most, "{name}: {measured:?}");
        // A flat curve: equal rates at the top and the bottom leave no other shape.
        assert!(name != "bert" || measured.len() == 2, "{measured:?}");
    }
}
