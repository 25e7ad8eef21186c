//! A default sweep measured in blocks (`tests/data/blocks/`): relative rates recomputed from its
//! visits by the cell model, against the ones the file recorded (made by the estimator before
//! it), and what `show` and the demand make of them.

use profiler::matrix::cell_model::{DEFAULT_READ_AT, relative_rates};
use profiler::matrix::{
    CellSource, CostWeights, DEFAULT_EPS, ServerShape, demands, load_matrix, render_summary,
};
use std::path::Path;

const SWEEP: &str = "tests/data/blocks/input-pipeline.matrix.jsonl";

/// Two estimators of the same visits (the block ratios the file recorded, and the cell model)
/// agree: each one's rate lies inside the other's interval, cell for cell, and every cell the
/// file rated the model rates too.
#[test]
fn the_cell_model_agrees_with_the_recorded_block_ratios() {
    let m = load_matrix(Path::new(SWEEP)).unwrap();
    let blocks = &m.header.blocks;
    assert!(blocks.len() >= 2, "{blocks:?}");
    let recomputed = relative_rates(&m.cells, DEFAULT_READ_AT);
    for (cell, r) in m.cells.iter().zip(&recomputed) {
        let (Some(file), Some(now)) = (&cell.relative, r) else {
            assert_eq!(cell.relative.is_some(), r.is_some(), "{cell:?}");
            continue;
        };
        assert!(file.holds(now.rate), "{file:?} {now:?}");
        assert!(now.holds(file.rate), "{file:?} {now:?}");
    }
    // Every measured cell and every modelled one has a relative rate; the reference is the unit.
    assert!(
        m.cells
            .iter()
            .filter(|c| matches!(c.source, CellSource::Measured | CellSource::Modelled))
            .all(|c| c.relative.is_some())
    );
    let top = m
        .cells
        .iter()
        .find(|c| {
            c.cpu == blocks[0].reference_cpu && c.memory_bytes == blocks[0].reference_memory_bytes
        })
        .unwrap();
    assert_eq!(top.relative.as_ref().unwrap().rate, 1.0);
    // The launch being live, each block is closed with the reference; each is opened with it too
    // but the first of the live check's launch, which starts fresh at the check's level.
    assert!(blocks.iter().all(|b| b.closing.is_some()), "{blocks:?}");
    assert!(
        blocks.iter().filter(|b| b.opening.is_none()).count() <= 1,
        "{blocks:?}"
    );
    // The sweep ran the host probe: its visits carry the host's speed.
    assert!(
        m.cells
            .iter()
            .flat_map(|c| &c.visits)
            .any(|v| v.host.is_some())
    );
}

#[test]
fn show_prints_the_relative_table_and_the_demand_reads_the_ratios() {
    let m = load_matrix(Path::new(SWEEP)).unwrap();
    let text = render_summary(&m);
    assert!(text.contains("relative to the reference"), "{text}");
    assert!(text.contains("relative rates: 3 cell(s) at ±"), "{text}");
    let d = &demands(
        &m,
        &ServerShape::default(),
        DEFAULT_EPS,
        CostWeights::default(),
    )
    .unwrap()[0]
        .1;
    // The surface is the relative rates times the reference's absolute rate.
    let b = &m.header.blocks[0];
    let reference = (m.cells.iter())
        .find(|c| c.cpu == b.reference_cpu && c.memory_bytes == b.reference_memory_bytes)
        .and_then(|c| c.samples_per_s())
        .unwrap();
    let most = (m.cells.iter())
        .filter_map(|c| c.relative.as_ref().map(|r| r.rate))
        .fold(0.0, f64::max);
    let best = reference * most;
    assert!(
        (d.best_samples_per_s_per_gpu - best).abs() < 1e-9 * best,
        "{d}"
    );
}
