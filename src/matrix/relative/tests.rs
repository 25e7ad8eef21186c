use super::*;
use crate::matrix::fixtures::{measured, visit};

const GIB: u64 = 1 << 30;

fn reference(rate: f64, start: f64) -> BlockReference {
    BlockReference {
        samples_per_s: rate,
        ci95_low: rate * 0.99,
        ci95_high: rate * 1.01,
        windows: 5,
        measured_unix_s: [start, start + 10.0],
    }
}

/// A block from `start` to `start + 100`, its reference opened at `open` and closed at `close`
/// samples/s.
fn block(index: u32, start: f64, open: f64, close: f64) -> SweepBlock {
    SweepBlock {
        index,
        params: BTreeMap::new(),
        reference_cpu: 2.0,
        reference_memory_bytes: GIB,
        span_unix_s: [start, start + 100.0],
        opening: Some(reference(open, start)),
        closing: Some(reference(close, start + 90.0)),
        drifted: false,
        disturbed: false,
    }
}

/// A visit halfway through a block whose reference went from 100 to 121 is read against the
/// geometric middle, 110, on its own launch.
#[test]
fn a_visit_is_read_against_its_blocks_reference_at_its_middle() {
    let blocks = [block(0, 0.0, 100.0, 121.0)];
    let mut cell = measured(1.0, GIB, 55.0, None);
    // Its middle at 50 s: halfway between the references' middles (5 s and 95 s).
    cell.visits.push(visit(3, 55.0, 45.0, 0.01));
    let ratios = ratios_by_launch(&blocks, &cell);
    assert_eq!(ratios.len(), 1);
    assert_eq!(ratios[0].0, 3);
    assert!((ratios[0].1 - 0.5f64.ln()).abs() < 1e-9, "{ratios:?}");
}

/// A drifted block gives no ratio; its visits' launches are named as left out.
#[test]
fn a_left_out_block_names_its_launches() {
    let mut drifted = block(0, 0.0, 100.0, 150.0);
    assert!(drifted.judge_drift(0.05));
    drifted.drifted = true;
    let blocks = [drifted, block(1, 100.0, 100.0, 100.0)];
    let mut cell = measured(1.0, GIB, 50.0, None);
    cell.visits.push(visit(1, 50.0, 40.0, 0.01));
    cell.visits.push(visit(2, 50.0, 140.0, 0.01));
    assert_eq!(left_out_launches(&blocks, &cell), vec![1]);
    assert_eq!(ratios_by_launch(&blocks, &cell).len(), 1);
}

/// The spread of one block's log-ratio is pooled over the cells other than the reference,
/// each about its own mean.
#[test]
fn the_block_spread_pools_cells_about_their_own_means() {
    let blocks = [block(0, 0.0, 100.0, 100.0), block(1, 100.0, 100.0, 100.0)];
    let mut one = measured(1.0, GIB, 50.0, None);
    one.visits = vec![visit(1, 50.0, 40.0, 0.01), visit(1, 60.0, 140.0, 0.01)];
    let mut half = measured(0.5, GIB, 25.0, None);
    half.visits = vec![visit(1, 25.0, 20.0, 0.01), visit(1, 30.0, 120.0, 0.01)];
    let mut top = measured(2.0, GIB, 100.0, None);
    top.visits = vec![visit(1, 100.0, 0.0, 0.01), visit(1, 200.0, 100.0, 0.01)];
    let (sd, df) = block_spread(&blocks, &[top, one, half]);
    assert_eq!(df, 2);
    let d = (1.2f64).ln() / 2.0;
    assert!((sd - (2.0 * d * d).sqrt()).abs() < 1e-9, "{sd}");
}
