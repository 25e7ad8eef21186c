//! The predictor on the shipped zoo, each model held out in turn (with its copies: the zoo's
//! other server shapes share its curve) and predicted from the other eleven.

use profiler::matrix::{CellSource, load_matrix};
use profiler::predict::{Library, SETTINGS, evaluate, predict_matrix};
use std::path::Path;

/// Quasar's overall average error predicting a workload from two allocations (ASPLOS 2014).
const MEAN_ERROR_CEILING: f64 = 0.08;
/// A 95% interval should hold the truth this often at least.
const COVERAGE_FLOOR: f64 = 0.9;

#[test]
fn the_zoo_held_out_from_3_and_24_cpus() {
    let zoo = Library::zoo();
    let s = evaluate::leave_one_out(&zoo, &[3.0, 24.0], &SETTINGS);
    println!("{}", s.describe());
    assert_eq!((s.jobs, s.cells), (12, 84));
    assert!(s.mean_error <= MEAN_ERROR_CEILING, "{}", s.describe());
    assert!(s.coverage >= COVERAGE_FLOOR, "{}", s.describe());
}

#[test]
fn the_zoo_measured_one_cell_at_a_time_to_5_percent() {
    let zoo = Library::zoo();
    let s = evaluate::sequential(&zoo, 0.05, &SETTINGS);
    println!(
        "{:.2} of {} levels measured; {}",
        s.mean_measured,
        s.levels,
        s.scores.describe()
    );
    for (job, cpus) in &s.measured {
        println!("  {job}: measured {cpus:?}");
    }
    assert!(s.mean_measured <= 4.0, "{:.2} cells a job", s.mean_measured);
    assert!(
        s.scores.coverage >= COVERAGE_FLOOR,
        "{}",
        s.scores.describe()
    );
    // Every job has the reference and one more: one cell says nothing of a curve's shape.
    assert!(s.measured.iter().all(|(_, m)| m.len() >= 2));
}

#[test]
fn a_partial_matrix_gets_every_missing_cell_predicted() {
    // resnet50's zoo matrix as if swept at 3 and 24 CPUs, its other cells dropped.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("matrices/zoo/resnet50.matrix.jsonl");
    let mut partial = load_matrix(&path).unwrap();
    partial.cells.retain(|c| c.cpu == 3.0 || c.cpu == 24.0);
    for c in &mut partial.cells {
        c.source = CellSource::Measured;
    }
    let truth = load_matrix(&path).unwrap();
    let library = Library::zoo().without("resnet50");
    let p = predict_matrix(&partial, &[], &library, &SETTINGS).unwrap();
    let (axes, cells) = (&p.matrix.header.axes, &p.matrix.cells);
    assert_eq!(cells.len(), axes.cpu.len() * axes.memory_bytes.len());
    let top = *axes.memory_bytes.iter().max().unwrap();
    for cell in cells.iter().filter(|c| c.source == CellSource::Predicted) {
        let t = cell.throughput.as_ref().unwrap();
        assert!(t.ci95_low <= t.samples_per_s && t.samples_per_s <= t.ci95_high);
        assert!(cell.note.as_ref().unwrap().contains("predicted"));
        if cell.memory_bytes == top {
            let truth = truth
                .cells
                .iter()
                .find(|c| c.cpu == cell.cpu && c.memory_bytes == top);
            let truth = truth.unwrap().samples_per_s().unwrap();
            assert!(
                t.ci95_low <= truth && truth <= t.ci95_high,
                "{} CPUs: {t:?} vs {truth}",
                cell.cpu
            );
        }
    }
    let text = p.describe();
    assert!(
        text.contains("7 CPU level(s) predicted from 2 measured"),
        "{text}"
    );
    // A predicted matrix reads back, and a prediction of it predicts the same again.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("resnet50.predicted.matrix.jsonl");
    profiler::matrix::rewrite_matrix(&out, &p.matrix).unwrap();
    let again = predict_matrix(&load_matrix(&out).unwrap(), &[], &library, &SETTINGS).unwrap();
    assert_eq!(again.matrix.cells.len(), cells.len());
}

#[test]
fn nothing_measured_is_refused_with_what_to_do() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("matrices/zoo/bert.matrix.jsonl");
    let zoo_cells = load_matrix(&path).unwrap();
    let e = predict_matrix(&zoo_cells, &[], &Library::zoo(), &SETTINGS).unwrap_err();
    assert!(e.to_string().contains("no measured cell"), "{e}");
}

/// `sweep --predict` on this machine's library, each job held out: the cells its sweep
/// measured (`tests/data/library-eval/<kind>/<job>.predict.matrix.jsonl`, recorded by
/// scripts/evaluate-library.sh) predicted again from the other jobs, against the full sweep of
/// the same job in the same hour (`<job>.full.matrix.jsonl`): each predicted relative rate
/// inside the full sweep's 95% interval.
#[test]
fn the_predict_sweeps_held_out_against_their_full_sweeps() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let kind = "emerald-rapids-2t-24g-290f2493";
    let eval = root.join("tests/data/library-eval").join(kind);
    let walls = std::fs::read_to_string(eval.join("walls.csv")).unwrap();
    let mut library = Library::zoo();
    library
        .add(&root.join("tests/data/library").join(kind))
        .unwrap();
    let (mut inside, mut cells, mut jobs) = (0, 0, 0);
    for row in walls.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        let (job, full_s, predict_s) = (f[0], f[2], f[4]);
        let full = load_matrix(&eval.join(format!("{job}.full.matrix.jsonl"))).unwrap();
        let mut partial = load_matrix(&eval.join(format!("{job}.predict.matrix.jsonl"))).unwrap();
        partial.cells.retain(|c| c.source == CellSource::Measured);
        let levels: Vec<f64> = full.header.axes.cpu.clone();
        let p = predict_matrix(&partial, &levels, &library.without(job), &SETTINGS).unwrap();
        let top = |m: &profiler::matrix::Matrix| m.cells.iter().map(|c| c.memory_bytes).max();
        let (ptop, ftop) = (top(&p.matrix).unwrap(), top(&full).unwrap());
        let mut line = Vec::new();
        for c in (p.matrix.cells.iter())
            .filter(|c| c.source == CellSource::Predicted && c.memory_bytes == ptop)
        {
            let Some(truth) = (full.cells.iter())
                .find(|t| t.cpu == c.cpu && t.memory_bytes == ftop)
                .and_then(|t| t.relative.clone())
            else {
                continue;
            };
            let predicted = c.relative.as_ref().unwrap().rate;
            let holds = truth.ci95_low <= predicted && predicted <= truth.ci95_high;
            inside += usize::from(holds);
            cells += 1;
            line.push(format!(
                "{} CPUs {predicted:.3} vs {:.3} [{:.3}, {:.3}]{}",
                c.cpu,
                truth.rate,
                truth.ci95_low,
                truth.ci95_high,
                if holds { "" } else { " outside" }
            ));
        }
        jobs += 1;
        println!(
            "{job}: predict sweep {predict_s} s against {full_s} s; {}",
            line.join("; ")
        );
    }
    println!("{inside} of {cells} predicted cells inside the full sweeps' intervals, {jobs} jobs");
    assert!(jobs >= 8, "{jobs} jobs judged");
    assert!(
        inside as f64 >= COVERAGE_FLOOR * cells as f64,
        "{inside} of {cells} inside"
    );
}

/// Synergy's default scenario (`replay --window 4000..4999`) on the zoo and on the zoo with each
/// model predicted from its cells at 3 and 24 CPUs and the other eleven
/// (`scripts/predict-zoo-replay.sh 3,24`): the Tune schemes' mean JCT within 5%.
#[test]
fn the_default_scenario_on_zoo_matrices_predicted_from_two_cells() {
    use profiler::matrix::shipped_zoo;
    use profiler::replay::{ReplayOptions, run};
    let dir = tempfile::tempdir().unwrap();
    for (name, _, truth) in shipped_zoo() {
        let mut partial = truth.clone();
        partial.cells.retain(|c| c.cpu == 3.0 || c.cpu == 24.0);
        for c in &mut partial.cells {
            c.source = CellSource::Measured;
        }
        let library = Library::zoo().without(name);
        let predicted = predict_matrix(&partial, &[], &library, &SETTINGS).unwrap();
        let path = dir.path().join(format!("{name}.matrix.jsonl"));
        std::fs::write(path, predicted.matrix.to_jsonl()).unwrap();
    }
    let schemes = vec![
        ("fifo".to_string(), "tune".to_string()),
        ("srtf".to_string(), "tune".to_string()),
    ];
    let replay = |profiles: Option<&Path>| {
        let opts = ReplayOptions {
            profiles: profiles.map(Path::to_path_buf),
            schemes: schemes.clone(),
            window: Some((4000, 4999)),
            draws: 0,
            ..Default::default()
        };
        let out = run(&opts).unwrap();
        (out.runs.iter())
            .map(|r| r.summary.mean_jct_s)
            .collect::<Vec<f64>>()
    };
    let (zoo, predicted) = (replay(None), replay(Some(dir.path())));
    for ((scheme, z), p) in schemes.iter().zip(&zoo).zip(&predicted) {
        let gap = p / z - 1.0;
        println!(
            "{}+{}: mean JCT {:.2} h predicted, {:.2} h the zoo ({:+.1}%)",
            scheme.0,
            scheme.1,
            p / 3600.0,
            z / 3600.0,
            100.0 * gap
        );
        assert!(gap.abs() <= 0.05, "{scheme:?}: {gap:+.3}");
    }
}
