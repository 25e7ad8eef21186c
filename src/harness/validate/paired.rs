//! Validation on pairs: where the sweep measured in blocks, a validated cell and its top memory
//! level are each relative to the reference of their own blocks, so their ratio leaves out what
//! the host did between launches. A cache model predicts a cell by scaling the top cell's rate,
//! so its predicted ratio is its prediction over the top cell's rate, judged against that
//! measured ratio.

use crate::matrix::{
    CacheKind, Cell, ModelAccuracy, PairedRatio, RelativeRate, Validation, ValidationCell,
};

/// The measured ratio of `cell` to `top` (its CPU level and parameters at the top memory
/// level) from their relative rates, with the pair's 95% half-width; `None` without them.
pub fn paired_ratio(cell: &Cell, top: &Cell) -> Option<PairedRatio> {
    let (c, t) = (cell.relative.as_ref()?, top.relative.as_ref()?);
    let top_samples_per_s = top.samples_per_s().filter(|r| *r > 0.0)?;
    if c.rate <= 0.0 || t.rate <= 0.0 {
        return None;
    }
    let h = (log_half(c).powi(2) + log_half(t).powi(2)).sqrt();
    Some(PairedRatio {
        measured_ratio: c.rate / t.rate,
        half_width_pct: 100.0 * h.exp_m1(),
        top_samples_per_s,
    })
}

/// The wider side of a relative interval, in log space.
fn log_half(r: &RelativeRate) -> f64 {
    let up = (r.ci95_high / r.rate).ln();
    let down = (r.rate / r.ci95_low.max(f64::MIN_POSITIVE)).ln();
    up.max(down).max(0.0)
}

/// `kind`'s error on `c`'s pair, percent: its predicted ratio to the top cell against the
/// measured one.
pub fn paired_error_pct(c: &ValidationCell, kind: CacheKind) -> Option<f64> {
    let p = c.paired.as_ref()?;
    let predicted = c.predicted.get(&kind).copied().unwrap_or(0.0) / p.top_samples_per_s;
    Some(100.0 * (predicted / p.measured_ratio - 1.0))
}

/// Each model's paired accuracy over the cells that have a pair, and the pairs' median
/// half-width; nothing where no cell has one.
pub fn accuracy(cells: &[ValidationCell]) -> (Vec<ModelAccuracy>, Option<f64>) {
    let widths: Vec<f64> = cells
        .iter()
        .filter_map(|c| c.paired.as_ref().map(|p| p.half_width_pct))
        .collect();
    if widths.is_empty() {
        return (Vec::new(), None);
    }
    let models = CacheKind::ALL
        .iter()
        .map(|&kind| {
            let errors: Vec<f64> = (cells.iter())
                .filter_map(|c| paired_error_pct(c, kind).map(f64::abs))
                .collect();
            ModelAccuracy {
                model: kind,
                median_abs_error_pct: crate::stats::median(&errors),
                max_abs_error_pct: errors.iter().copied().fold(0.0, f64::max),
                cells: errors.len() as u32,
            }
        })
        .collect();
    (models, Some(crate::stats::median(&widths)))
}

/// One line on the paired errors of `shown`, where there are pairs.
pub fn describe(v: &Validation, shown: CacheKind) -> Option<String> {
    let m = v.paired_models.iter().find(|m| m.model == shown)?;
    Some(format!(
        "paired with their blocks (each cell over its top memory level, both against their \
         blocks' reference): {} median |error| {:.1}% (max {:.1}%) over {} cells; the pairs' \
         95% half-width {:.1}% median",
        shown.as_str(),
        m.median_abs_error_pct,
        m.max_abs_error_pct,
        m.cells,
        v.paired_median_half_width_pct.unwrap_or(0.0)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::fixtures;
    use std::collections::BTreeMap;

    fn cell(memory_bytes: u64, rate: f64, rel: [f64; 3]) -> Cell {
        fixtures::measured(1.0, memory_bytes, rate, Some(rel))
    }

    /// Launches far apart put the cell at 300 against a top cell of 500 (0.6), where their
    /// blocks say 0.25 / 0.5 = 0.5: a model predicting 250 is exact on the pair, 20% low on the
    /// launches' ratio.
    #[test]
    fn a_prediction_is_judged_on_the_ratio_its_blocks_measured() {
        let top = cell(2 << 30, 500.0, [0.5, 0.49, 0.51]);
        let low = cell(1 << 30, 300.0, [0.25, 0.24, 0.26]);
        let p = paired_ratio(&low, &top).unwrap();
        assert!((p.measured_ratio - 0.5).abs() < 1e-12);
        // The wider side of each interval: below the rate, for both.
        let h = ((0.25f64 / 0.24).ln().powi(2) + (0.5f64 / 0.49).ln().powi(2)).sqrt();
        assert!(
            (p.half_width_pct - 100.0 * h.exp_m1()).abs() < 1e-9,
            "{p:?}"
        );
        let v = ValidationCell {
            cpu: 1.0,
            memory_bytes: 1 << 30,
            params: BTreeMap::new(),
            measured_samples_per_s: 300.0,
            predicted: BTreeMap::from([(CacheKind::PageCache, 250.0), (CacheKind::Minio, 400.0)]),
            rerun_error_pct: None,
            check: None,
            paired: Some(p),
        };
        assert!(paired_error_pct(&v, CacheKind::PageCache).unwrap().abs() < 1e-9);
        assert!((paired_error_pct(&v, CacheKind::Minio).unwrap() - 60.0).abs() < 1e-9);
        let (models, width) = accuracy(std::slice::from_ref(&v));
        assert_eq!(models.len(), 2);
        assert!(width.is_some());
        let mut bare = low.clone();
        bare.relative = None;
        assert_eq!(paired_ratio(&bare, &top), None);
    }
}
