//! The CPU x memory heat map of one view.

use super::units::{amount, num, trim};
use super::{SHARE_LABEL, View};
use crate::matrix::CellSource;
use crate::matrix::surface::same_level;
use crate::plot::{HeatCell, HeatCellKind, Heatmap, Reference};

/// CPU x memory heat map of the cells' values.
pub fn heatmap(v: &View) -> Heatmap {
    let mut cells = Vec::with_capacity(v.cells.len());
    // Rows are memory levels (bottom up), columns CPU levels.
    for mi in 0..v.mem.len() {
        for ci in 0..v.cpu.len() {
            let c = v.cell(ci, mi);
            let (kind, text) = match (c.source, c.value) {
                (None, _) => (HeatCellKind::Missing, "-".to_string()),
                (Some(CellSource::Infeasible), _) => (HeatCellKind::Failed, "OOM".into()),
                (Some(_), None) => (HeatCellKind::Failed, "failed".into()),
                (Some(CellSource::Modelled), Some(x)) => {
                    (HeatCellKind::Estimated, format!("~{}", v.value_text(x)))
                }
                (Some(_), Some(x)) if c.disturbed => {
                    (HeatCellKind::Disturbed, format!("!{}", v.value_text(x)))
                }
                (Some(_), Some(x)) => (HeatCellKind::Measured, v.value_text(x)),
            };
            let measured = matches!(kind, HeatCellKind::Measured | HeatCellKind::Disturbed);
            let detail = (c.interval.zip(c.value))
                .filter(|&(_, x)| measured && x > 0.0)
                .map(|((lo, hi), x)| format!("±{}%", trim(format!("{:.1}", 50.0 * (hi - lo) / x))));
            cells.push(HeatCell {
                value: c.value,
                text,
                detail,
                kind,
            });
        }
    }
    let (what, per_cell) = if v.normalized {
        (
            "throughput / throughput at the share",
            "in each cell: throughput / throughput at the share",
        )
    } else {
        ("samples/s", "in each cell: samples/s")
    };
    let column = fractional_index(&v.cpu, v.share_cpu);
    let row = fractional_index(&v.mem, v.share_mem);
    let mut label = format!(
        "{SHARE_LABEL}: {}, {}",
        amount(v.share_cpu, "CPUs"),
        amount(v.share_mem, v.mem_unit)
    );
    if column.is_none() && row.is_none() {
        label.push_str("\n(off the grid)");
    }
    Heatmap {
        title: format!("{}: throughput by CPU and memory", v.title),
        subtitle: Some(v.subtitle(per_cell)),
        x_label: v.cpu_label().replace(", log scale", ""),
        y_label: v.mem_label().replace(", log scale", ""),
        columns: v.cpu.iter().map(|&c| num(c)).collect(),
        rows: v.mem.iter().map(|&m| num(m)).collect(),
        cells,
        value_label: what.into(),
        best: Some(((v.best.ci, v.best.mi), v.best.label.clone())),
        reference: Some(Reference { column, row, label }),
        size: (1000, 560),
    }
}

/// `x` as a fractional index into ascending `levels` for the heat map (`i + 0.5` at level `i`,
/// linear between levels); `None` outside the levels.
pub(super) fn fractional_index(levels: &[f64], x: f64) -> Option<f64> {
    if let Some(i) = levels.iter().position(|&l| same_level(l, x)) {
        return Some(i as f64 + 0.5);
    }
    let hi = levels.iter().position(|&l| l > x)?;
    if hi == 0 {
        return None;
    }
    let (a, b) = (levels[hi - 1], levels[hi]);
    Some(hi as f64 - 0.5 + (x - a) / (b - a))
}
