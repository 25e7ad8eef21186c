//! `--format synergy`: one model file per matrix for Synergy's simulator (msr-fiddle/synergy,
//! `simulator/models/<name>_1.py`), a `ModelStats` subclass with the best-case demand, the
//! speed-up there, the iteration time at the proportional share and the 9 x 5 `tput` table.
//!
//! `tput[r][c]` is the per-GPU throughput at Synergy's grid point (CPUs per GPU
//! [`SYNERGY_CPUS_PER_GPU`]`[r]`, GB per GPU [`SYNERGY_MEM_GB_PER_GPU`]`[c]`) divided by the
//! throughput at the GPU-proportional share of `--server`, so the proportional cell is 1.
//! Synergy looks cells up by exact equality (`Job.get_idx`), so `cpus` and `mem` must be grid
//! values: the best-case demand is snapped up to the next grid value. Grid points that are not
//! on the matrix's own grid are interpolated ([`Interp::Bilinear`]); the file says which.
//!
//! Blox (`super::blox`) uses the same layout without the 20.83 GB column.

use super::{Artifact, ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered, fmt_sig6};
use crate::matrix::surface::same_level;
use crate::matrix::{CellSource, Interp};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Rows of Synergy's table: CPUs per GPU (`cpu_val` in `simulator/jobs/job.py`).
pub const SYNERGY_CPUS_PER_GPU: [f64; 9] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 9.0, 12.0, 24.0];
/// Columns of Synergy's table: GB per GPU (`mem_val`): 62.5/3, then multiples of 62.5.
pub const SYNERGY_MEM_GB_PER_GPU: [f64; 5] = [20.83, 62.5, 125.0, 187.5, 250.0];

/// What differs between the simulators that share this file layout.
pub(super) struct Target {
    /// Simulator name, for comments and notes.
    pub tool: &'static str,
    /// `--format` value.
    pub format: &'static str,
    pub mem_columns: &'static [f64],
    /// Where the file goes in the simulator's tree.
    pub install_dir: &'static str,
}

pub(super) const SYNERGY: Target = Target {
    tool: "Synergy",
    format: "synergy",
    mem_columns: &SYNERGY_MEM_GB_PER_GPU,
    install_dir: "simulator/models/",
};

pub struct Synergy;

impl Exporter for Synergy {
    fn layout(&self) -> Layout {
        Layout::Directory
    }

    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
        render_model_files(matrices, opts, &SYNERGY)
    }
}

/// One model file per matrix, named `<model>_1.py` (the model name made a Python identifier).
pub(super) fn render_model_files(
    matrices: &[Prepared],
    opts: &ExportOptions,
    target: &Target,
) -> Result<Rendered, ExportError> {
    super::unique_by(matrices, |p| class_name(p.model()))?;
    let mut out = Rendered::default();
    for p in matrices {
        let (artifact, note) = model_file(p, opts, target)?;
        out.notes.extend(note);
        out.artifacts.push(artifact);
    }
    Ok(out)
}

/// `<model>_1`, with every character that cannot be in a Python identifier replaced by `_`.
pub fn class_name(model: &str) -> String {
    let mut s: String = model
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, 'm');
    }
    s + "_1"
}

/// The first grid value at or above `v`, or the largest one (`clamped`).
fn snap_up(grid: &[f64], v: f64) -> (f64, bool) {
    match grid.iter().find(|&&g| g >= v || same_level(g, v)) {
        Some(&g) => (g, false),
        None => (grid[grid.len() - 1], true),
    }
}

/// Where the target's grid values fall on one axis of the matrix's grid, as a comment line.
fn axis_coverage(levels: &[f64], values: &[f64], unit: &str) -> (String, usize) {
    let (lo, hi) = (levels[0], levels[levels.len() - 1]);
    let mut groups: BTreeMap<u8, Vec<String>> = BTreeMap::new();
    for &v in values {
        let (key, text) = if levels.iter().any(|&l| same_level(l, v)) {
            (0, fmt_sig6(v))
        } else if v > hi {
            (2, fmt_sig6(v))
        } else if v < lo {
            (3, fmt_sig6(v))
        } else {
            let below = levels.iter().rev().find(|&&l| l < v).copied().unwrap_or(lo);
            let above = levels.iter().find(|&&l| l > v).copied().unwrap_or(hi);
            (
                1,
                format!(
                    "{} (between {} and {})",
                    fmt_sig6(v),
                    fmt_sig6(below),
                    fmt_sig6(above)
                ),
            )
        };
        groups.entry(key).or_default().push(text);
    }
    let off_grid = values.len() - groups.get(&0).map_or(0, Vec::len);
    let parts: Vec<String> = groups
        .iter()
        .map(|(k, vs)| {
            let what = match k {
                0 => "on the matrix's grid".to_owned(),
                1 => "interpolated".to_owned(),
                2 => format!("clamped to the largest level, {} {unit}", fmt_sig6(hi)),
                _ => format!(
                    "below the smallest level, {} {unit}, falling linearly to 0",
                    fmt_sig6(lo)
                ),
            };
            format!("{what}: {}", vs.join(", "))
        })
        .collect();
    (parts.join("; "), off_grid)
}

/// A model file's numbers: the per-GPU table normalised to the proportional share, and the
/// best-case demand snapped onto the tool's grid.
struct ModelTable {
    /// Samples/s per GPU at the proportional share, and the batch per GPU.
    prop: f64,
    batch: u64,
    /// Rows of CPUs per GPU, columns of GB per GPU, as written.
    table: Vec<Vec<String>>,
    cpus: f64,
    cpus_clamped: bool,
    mem: f64,
    mem_clamped: bool,
    speedup: f64,
    iter_time: f64,
}

fn model_table(
    p: &Prepared,
    opts: &ExportOptions,
    target: &Target,
) -> Result<ModelTable, ExportError> {
    let (rows, cols, s) = (&SYNERGY_CPUS_PER_GPU, target.mem_columns, &p.surface);
    let server = &opts.server;
    let (share_c, share_m) = (server.share_cpus(), server.share_mem_gb());
    let prop = p.finite(
        "throughput at the proportional share",
        s.at(share_c, share_m, Interp::Bilinear),
    )?;
    if prop <= 0.0 {
        return Err(ExportError::unsupported(
            &p.path,
            format!(
                "no throughput at the GPU-proportional share of a {server} server ({} CPUs, {} GB \
                 per GPU): {}'s table is normalised to it",
                fmt_sig6(share_c),
                fmt_sig6(share_m),
                target.tool
            ),
        ));
    }
    let batch = p.require_batch(&format!("{}'s iter_time", target.tool))?;
    let norm = |c: f64, m: f64| -> Result<f64, ExportError> {
        p.finite("normalised throughput", s.at(c, m, Interp::Bilinear) / prop)
    };
    let mut table = Vec::with_capacity(rows.len());
    for &c in rows {
        let row = cols
            .iter()
            .map(|&m| norm(c, m).map(fmt_sig6))
            .collect::<Result<Vec<_>, _>>()?;
        table.push(row);
    }
    let d = &p.demand;
    let (cpus, cpus_clamped) = snap_up(rows, d.cpus_per_gpu);
    let (mem, mem_clamped) = snap_up(cols, d.mem_gb_per_gpu);
    Ok(ModelTable {
        prop,
        batch,
        table,
        cpus,
        cpus_clamped,
        mem,
        mem_clamped,
        speedup: norm(cpus, mem)?,
        iter_time: p.finite("iter_time", batch as f64 / prop)?,
    })
}

/// Renders one model file; the note (for the terminal) says what was snapped or interpolated.
fn model_file(
    p: &Prepared,
    opts: &ExportOptions,
    target: &Target,
) -> Result<(Artifact, Option<String>), ExportError> {
    let t = model_table(p, opts, target)?;
    let class = class_name(p.model());
    let mut lines = describe_table(p, opts, target, &t);
    lines.extend(describe_demand(p, opts, target, &t, &class));
    let mut text = String::new();
    for l in &lines {
        let _ = writeln!(text, "# {}", l.replace(['\n', '\r'], " "));
    }
    text.push_str(&python_class(&class, &t));
    let (rows, cols, d) = (&SYNERGY_CPUS_PER_GPU, target.mem_columns, &p.demand);
    let (_, rows_off) = axis_coverage(&p.surface.cpu, rows, "CPUs");
    let (_, cols_off) = axis_coverage(&p.surface.mem, cols, "GB");
    let mut note = Vec::new();
    if rows_off + cols_off > 0 {
        note.push(format!(
            "{} of {} rows and {} of {} columns are off the matrix's grid (interpolated or \
             clamped)",
            rows_off,
            rows.len(),
            cols_off,
            cols.len()
        ));
    }
    if !same_level(d.cpus_per_gpu, t.cpus) || !same_level(d.mem_gb_per_gpu, t.mem) {
        note.push(format!(
            "best-case demand {} CPUs, {} GB per GPU written as cpus {}, mem {} ({}'s grid)",
            fmt_sig6(d.cpus_per_gpu),
            fmt_sig6(d.mem_gb_per_gpu),
            fmt_sig6(t.cpus),
            fmt_sig6(t.mem),
            target.tool
        ));
    }
    let file = format!("{class}.py");
    let note = (!note.is_empty()).then(|| format!("{file}: {}", note.join("; ")));
    Ok((Artifact::text(file, text), note))
}

/// The file's first comment lines: where it comes from, and what its table holds.
fn describe_table(
    p: &Prepared,
    opts: &ExportOptions,
    target: &Target,
    t: &ModelTable,
) -> Vec<String> {
    let (rows, cols, s, server) = (
        &SYNERGY_CPUS_PER_GPU,
        target.mem_columns,
        &p.surface,
        &opts.server,
    );
    let mut lines = vec![format!(
        "{} model file for {:?}, written by `profiler export --format {}` from {}.",
        target.tool,
        p.model(),
        target.format,
        p.path.display()
    )];
    if let Some(prov) = &p.matrix.header.provenance {
        lines.push(format!("Matrix provenance: {prov}"));
    }
    let params = if s.params.is_empty() {
        String::new()
    } else {
        format!(
            ", parameters {}",
            s.params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        )
    };
    let job = match p.matrix.header.job.gpus {
        0 => "a CPU-only job (taken as one accelerator)".to_owned(),
        g => format!("a {g}-GPU job"),
    };
    lines.push(format!(
        "Per-GPU table of {job}{params}. tput = samples/s per GPU / {} samples/s per GPU at \
         the GPU-proportional share of a {server} server ({} CPUs, {} GB per GPU).",
        fmt_sig6(t.prop),
        fmt_sig6(server.share_cpus()),
        fmt_sig6(server.share_mem_gb()),
    ));
    lines.push(format!(
        "Rows: CPUs per GPU {}; columns: GB per GPU {}. Values off the matrix's grid are \
         interpolated bilinearly (clamped above the grid, linear to 0 below it).",
        rows.map(fmt_sig6).join(", "),
        cols.iter()
            .copied()
            .map(fmt_sig6)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let (row_cov, _) = axis_coverage(&s.cpu, rows, "CPUs");
    let (col_cov, _) = axis_coverage(&s.mem, cols, "GB");
    lines.push(format!("Rows {row_cov}."));
    lines.push(format!("Columns {col_cov}."));
    let mut sources: BTreeMap<&str, usize> = BTreeMap::new();
    for c in p.matrix.cells.iter().filter(|c| c.params == s.params) {
        *sources.entry(c.source.as_str()).or_default() += 1;
    }
    lines.push(format!(
        "Matrix cells behind it: {}.",
        [
            CellSource::Measured,
            CellSource::Modelled,
            CellSource::Failed,
            CellSource::Infeasible
        ]
        .iter()
        .filter_map(|src| sources
            .get(src.as_str())
            .map(|n| format!("{n} {}", src.as_str())))
        .collect::<Vec<_>>()
        .join(", ")
    ));
    lines
}

/// The comment lines on the best-case demand, the other fields, the validation and how to
/// install the file.
fn describe_demand(
    p: &Prepared,
    opts: &ExportOptions,
    target: &Target,
    t: &ModelTable,
    class: &str,
) -> Vec<String> {
    let (d, cols) = (&p.demand, target.mem_columns);
    let snapped = |v: f64, g: f64, clamped: bool, what: &str| {
        if clamped {
            format!("{what} {} (above the grid: clamped)", fmt_sig6(g))
        } else if same_level(v, g) {
            format!("{what} {}", fmt_sig6(g))
        } else {
            format!("{what} {} (snapped up)", fmt_sig6(g))
        }
    };
    let mut lines = vec![format!(
        "Best-case demand (eps {}, cpu weight {}, mem weight {}): {} CPUs and {} GB per GPU, \
         written on {}'s grid as {}, {}. speed = mem, as in {}'s zoo.",
        fmt_sig6(d.eps),
        fmt_sig6(opts.weights.cpu),
        fmt_sig6(opts.weights.mem),
        fmt_sig6(d.cpus_per_gpu),
        fmt_sig6(d.mem_gb_per_gpu),
        target.tool,
        snapped(d.cpus_per_gpu, t.cpus, t.cpus_clamped, "cpus"),
        snapped(d.mem_gb_per_gpu, t.mem, t.mem_clamped, "mem"),
        target.tool,
    )];
    if cols[0] == SYNERGY_MEM_GB_PER_GPU[0] && same_level(t.mem, cols[0]) {
        lines.push(
            "mem 20.83 is Synergy's grid value (mem_val); Synergy's own zoo files write \
             int(62.5/3) = 20 here."
                .into(),
        );
    }
    lines.push(format!(
        "speedup = tput at (cpus, mem); iter_time = iter_time_base = seconds per iteration \
         (batch {} per GPU) at the proportional share; placement_penalty is not measured (1).",
        t.batch
    ));
    if let Some(v) = p.validation_summary() {
        lines.push(format!(
            "Cache models against measured cells (profiler validate): {v}."
        ));
    }
    lines.push(format!(
        "Install: copy to {}{class}.py and register it in {}.",
        target.install_dir,
        if target.tool == "Synergy" {
            "models/__init__.py and jobs/model_zoo.py"
        } else {
            "the simulator's model list"
        }
    ));
    lines
}

/// The Python class the tool's simulator imports.
fn python_class(class: &str, t: &ModelTable) -> String {
    let mut text = String::new();
    let _ = write!(
        text,
        "from models.model_stats import ModelStats\n\
         import numpy as np\n\
         \n\
         class {class}(ModelStats):\n    \
             def __init__(\n        \
                 self,\n        \
                 name):\n        \
                 super().__init__(name, 1)\n\
         \n    \
             def update_stats(self):\n        \
                 self.cpus = {cpus}\n        \
                 self.mem = {mem}\n        \
                 self.speed = {mem}\n        \
                 self.batch = {batch}\n        \
                 self.placement_penalty = 1\n        \
                 self.speedup = {speedup}\n        \
                 self.iter_time = {iter_time}\n        \
                 self.iter_time_base = {iter_time}\n        \
                 self.tput = np.array([\n",
        cpus = fmt_sig6(t.cpus),
        mem = fmt_sig6(t.mem),
        batch = t.batch,
        speedup = fmt_sig6(t.speedup),
        iter_time = fmt_sig6(t.iter_time),
    );
    for (i, row) in t.table.iter().enumerate() {
        let sep = if i + 1 < t.table.len() { "," } else { "" };
        let _ = writeln!(text, "             [{}]{sep}", row.join(", "));
    }
    text.push_str("             ])\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_are_python_identifiers() {
        assert_eq!(class_name("resnet18"), "resnet18_1");
        assert_eq!(class_name("input-pipeline"), "input_pipeline_1");
        assert_eq!(class_name("3d-unet"), "m3d_unet_1");
        assert_eq!(class_name(""), "m_1");
    }

    #[test]
    fn snapping_goes_up_to_the_next_grid_value() {
        assert_eq!(snap_up(&SYNERGY_CPUS_PER_GPU, 7.5), (9.0, false));
        assert_eq!(snap_up(&SYNERGY_CPUS_PER_GPU, 9.0), (9.0, false));
        assert_eq!(snap_up(&SYNERGY_CPUS_PER_GPU, 9.000000000001), (9.0, false));
        assert_eq!(snap_up(&SYNERGY_CPUS_PER_GPU, 0.5), (1.0, false));
        assert_eq!(snap_up(&SYNERGY_CPUS_PER_GPU, 30.0), (24.0, true));
        assert_eq!(snap_up(&SYNERGY_MEM_GB_PER_GPU, 0.125), (20.83, false));
    }

    #[test]
    fn coverage_names_grid_interpolated_and_clamped_values() {
        let (text, off) = axis_coverage(&[1.0, 2.0, 4.0], &[0.5, 1.0, 3.0, 24.0], "CPUs");
        assert_eq!(off, 3);
        assert_eq!(
            text,
            "on the matrix's grid: 1; interpolated: 3 (between 2 and 4); clamped to the largest \
             level, 4 CPUs: 24; below the smallest level, 1 CPUs, falling linearly to 0: 0.5"
        );
    }
}
