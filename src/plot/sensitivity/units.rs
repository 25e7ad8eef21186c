//! Numbers, amounts and names as the charts and file names write them.

use crate::matrix::Surface;
use std::path::Path;

/// `3 CPUs`, `1 CPU`, `62.5 GB`; memory in MiB past a GiB in GiB (a share far above a small
/// matrix's levels).
pub(super) fn amount(v: f64, unit: &str) -> String {
    match unit {
        "CPUs" if v == 1.0 => "1 CPU".into(),
        "MiB" if v >= 1024.0 => format!("{} GiB", num(v / 1024.0)),
        _ => format!("{} {unit}", num(v)),
    }
}

pub(super) fn spread(levels: &[f64]) -> f64 {
    match (levels.first(), levels.last()) {
        (Some(&lo), Some(&hi)) if lo > 0.0 => hi / lo,
        _ => 1.0,
    }
}

pub(super) fn with_scale(label: &str, log: bool) -> String {
    if log {
        format!("{label}, log scale")
    } else {
        label.to_string()
    }
}

pub(super) fn level(levels: &[f64], x: f64) -> usize {
    Surface::level_index(levels, x).expect("level collected from the same cells")
}

/// A level for labels: few digits, no float noise (20.83 -> 20.8, 62.5, 0.5).
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        trim(format!("{v:.1}"))
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

pub(super) fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A file-name stem: letters, digits, `.`, `_`, `-` and `=` kept, anything else `-`.
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '=') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches(|c| c == '.' || c == '-').to_string();
    if s.is_empty() { "matrix".into() } else { s }
}

/// `dir/name.matrix.jsonl` -> `name`.
pub(super) fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".matrix.jsonl")
        .or_else(|| name.strip_suffix(".jsonl"))
        .unwrap_or(&name)
        .to_string()
}

/// `name`, or `name-2`, `name-3`, ... where an earlier one took it; the one returned is taken.
pub fn unique_name(used: &mut std::collections::HashSet<String>, name: &str) -> String {
    let mut unique = name.to_string();
    let mut k = 2;
    while !used.insert(unique.clone()) {
        unique = format!("{name}-{k}");
        k += 1;
    }
    unique
}
