//! Plain-text rendering of a matrix: one CPU x memory table per combination of other parameters.

use super::{CellKey, CellSource, Matrix};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

const GIB: f64 = (1u64 << 30) as f64;

/// Renders the matrix as tables of samples/s. Modelled values are marked `~`, failed cells
/// `failed`, infeasible cells `OOM`, missing cells `-`.
pub fn render_summary(matrix: &Matrix) -> String {
    let h = &matrix.header;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}), {} GPU(s), {} cells{}",
        h.job.name,
        h.job.model,
        h.job.gpus,
        matrix.cells.len(),
        h.machine
            .as_ref()
            .map(|m| format!(
                ", measured on {} ({} CPUs, cgroup {})",
                m.hostname, m.cpus, m.cgroup
            ))
            .unwrap_or_default()
    );
    if let Some(p) = &h.provenance {
        let _ = writeln!(out, "provenance: {p}");
    }
    let by_key: BTreeMap<CellKey, &super::Cell> =
        matrix.cells.iter().map(|c| (c.key(), c)).collect();
    let mut cpus: BTreeSet<u64> = h
        .axes
        .cpu
        .iter()
        .map(|c| (c * 1000.0).round() as u64)
        .collect();
    let mut mems: BTreeSet<u64> = h.axes.memory_bytes.iter().copied().collect();
    let mut param_sets: BTreeSet<BTreeMap<String, String>> = BTreeSet::new();
    for k in by_key.keys() {
        cpus.insert(k.cpu_milli);
        mems.insert(k.memory_bytes);
        param_sets.insert(k.params.clone());
    }
    if param_sets.is_empty() {
        param_sets.insert(BTreeMap::new());
    }
    for params in &param_sets {
        if !params.is_empty() {
            let label: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(out, "\n[{}]", label.join(", "));
        } else {
            out.push('\n');
        }
        let _ = write!(out, "{:>8} |", "CPU\\mem");
        for m in &mems {
            let _ = write!(out, " {:>10}", format!("{:.2}G", *m as f64 / GIB));
        }
        out.push('\n');
        let _ = writeln!(out, "{}", "-".repeat(10 + 11 * mems.len()));
        for &c in &cpus {
            let _ = write!(out, "{:>8} |", format!("{:.2}", c as f64 / 1000.0));
            for &m in &mems {
                let key = CellKey {
                    cpu_milli: c,
                    memory_bytes: m,
                    params: params.clone(),
                };
                let text = match by_key.get(&key) {
                    None => "-".to_string(),
                    Some(cell) => match (cell.source, cell.samples_per_s()) {
                        (CellSource::Failed, _) => "failed".into(),
                        (CellSource::Infeasible, _) => "OOM".into(),
                        (CellSource::Modelled, Some(v)) => format!("~{v:.1}"),
                        (_, Some(v)) => format!("{v:.1}"),
                        (_, None) => "?".into(),
                    },
                };
                let _ = write!(out, " {text:>10}");
            }
            out.push('\n');
        }
    }
    let _ = writeln!(
        out,
        "\nsamples/s; ~ = modelled by the cache model, OOM = infeasible (OOM-killed), - = not run"
    );
    out
}
