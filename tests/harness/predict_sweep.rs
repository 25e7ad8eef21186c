//! `sweep` with the prediction search, live: the levels it measures, and the rest predicted
//! from their relative rates and the zoo.

use super::*;

#[test]
fn a_predict_sweep_measures_some_levels_and_predicts_the_rest() {
    require_caps!("a_predict_sweep_measures_some_levels_and_predicts_the_rest");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.matrix.jsonl");
    let levels = [0.5, 1.0, 1.5, 2.0];
    let spec = pipeline_spec(
        dir.path(),
        "predicted",
        2.0,
        "cpu = { search = \"predict\", levels = [0.5, 1, 1.5, 2], tolerance = 0.5 }",
    );
    let outcome = sweep(spec, out.clone(), "profiler-test-predict");
    let cells = &outcome.matrix.cells;
    let of = |source: CellSource| -> Vec<&Cell> {
        let mut v: Vec<&Cell> = cells.iter().filter(|c| c.source == source).collect();
        v.sort_by(|a, b| a.cpu.total_cmp(&b.cpu));
        v
    };
    let (measured, predicted) = (of(CellSource::Measured), of(CellSource::Predicted));
    let described: Vec<String> = (cells.iter())
        .map(|c| {
            format!(
                "{} {:?} {:?}",
                c.cpu,
                c.source,
                c.relative.as_ref().map(|r| r.rate)
            )
        })
        .collect();
    println!("{}", described.join("\n"));
    // The highest level first, as the reference; every level is measured or predicted once.
    assert!(measured.iter().any(|c| c.cpu == 2.0), "{described:?}");
    assert_eq!(
        measured.len() + predicted.len(),
        levels.len(),
        "{described:?}"
    );
    assert!(
        !predicted.is_empty(),
        "at ±50% something is left to predict: {described:?}"
    );
    let reference = measured.last().unwrap().samples_per_s().unwrap();
    for p in &predicted {
        let r = p
            .relative
            .as_ref()
            .expect("a predicted cell has a relative rate");
        assert!(r.ci95_low <= r.rate && r.rate <= r.ci95_high, "{r:?}");
        // Its rate on the scale of the measured cells' relative rates times the reference's.
        let rate = p.samples_per_s().unwrap();
        assert!(
            (r.rate * reference / rate - 1.0).abs() < 1e-9,
            "{r:?} {rate}"
        );
        // More CPU never lowers a rate: between the measured relative rates around it.
        let rel = |c: &&Cell| c.relative.as_ref().unwrap().rate;
        let below = (measured.iter())
            .filter(|m| m.cpu < p.cpu)
            .map(rel)
            .reduce(f64::max);
        let above = (measured.iter())
            .filter(|m| m.cpu > p.cpu)
            .map(rel)
            .reduce(f64::min);
        if let (Some(b), Some(a)) = (below, above) {
            assert!(
                b.min(a) - 1e-9 <= r.rate && r.rate <= a.max(b) + 1e-9,
                "{b} {a} {r:?}"
            );
        }
    }
    // The file says the same, and names the levels it predicted.
    let on_disk = load_matrix(&out).unwrap();
    assert_eq!(&on_disk.cells, cells);
    let mut axis = on_disk.header.axes.cpu.clone();
    axis.sort_by(f64::total_cmp);
    assert_eq!(axis, levels);
}
