//! `profiler export`: matrices into the files other tools read.
//!
//! One file per format behind the [`Exporter`] trait; [`export`] is the manager: it loads the
//! matrices, builds each one's throughput surface and best-case demand once ([`Prepared`]),
//! lets the format render its files in memory, and writes them (one file, stdout, or a
//! directory). Formats and their fields are described in `docs/EXPORT.md`.

mod blox;
mod cell;
mod csv;
mod error;
mod gavel;
mod json;
mod kubernetes;
mod parquet;
pub(crate) mod slurm;
mod synergy;
mod synergy_profile;
mod table;

pub use cell::{CellChoice, ChosenCell};
pub use error::ExportError;
pub use json::{ExportedMatrix, read_json};
pub use synergy::{SYNERGY_CPUS_PER_GPU, SYNERGY_MEM_GB_PER_GPU};
pub use table::cells_frame;

use crate::matrix::{
    CostWeights, Demand, Matrix, ServerShape, Surface, SurfaceError, best_case, load_matrix,
};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Output formats of `profiler export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Long-form table, one row per cell, every field, plus the best-case demand (one file).
    Csv,
    /// The same table as Parquet (one file).
    Parquet,
    /// The matrices in the project's schema, pretty, with their best-case demand (one file).
    Json,
    /// Synergy simulator model files, `<model>_1.py`, one per matrix (a directory).
    Synergy,
    /// Synergy's offline-profiler `profile.json`, `<job>/profile.json` per matrix (a directory).
    SynergyProfile,
    /// Blox model files: Synergy's layout without the 20.83 GB column (a directory).
    Blox,
    /// A Gavel `simulation_throughputs.json` fragment, one entry per matrix (one file).
    Gavel,
    /// Slurm: per-model table of --cpus-per-gpu / --mem-per-gpu and a job_submit.lua (a directory).
    Slurm,
    /// Kubernetes container `resources` blocks, Guaranteed QoS (one YAML file).
    Kubernetes,
}

impl ExportFormat {
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            ExportFormat::Csv => Box::new(csv::Csv),
            ExportFormat::Parquet => Box::new(parquet::Parquet),
            ExportFormat::Json => Box::new(json::Json),
            ExportFormat::Synergy => Box::new(synergy::Synergy),
            ExportFormat::SynergyProfile => Box::new(synergy_profile::SynergyProfile),
            ExportFormat::Blox => Box::new(blox::Blox),
            ExportFormat::Gavel => Box::new(gavel::Gavel),
            ExportFormat::Slurm => Box::new(slurm::Slurm),
            ExportFormat::Kubernetes => Box::new(kubernetes::Kubernetes),
        }
    }

    /// The name as given to `--format`.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }
}

/// Everything `profiler export` was asked for.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub matrices: Vec<PathBuf>,
    pub format: ExportFormat,
    /// A file or directory, depending on the format; `-` (or none, for text formats written
    /// as one file) is stdout.
    pub output: Option<PathBuf>,
    pub server: ServerShape,
    pub eps: f64,
    pub weights: CostWeights,
    pub cell: CellChoice,
    /// Gavel worker type every throughput is filed under; `None`: each under its matrix's
    /// machine kind.
    pub gavel_worker: Option<String>,
    /// Where `job_submit.lua` reads the Slurm demand table from.
    pub slurm_table: String,
}

impl ExportOptions {
    /// Defaults for everything but the inputs and the format.
    pub fn new(matrices: Vec<PathBuf>, format: ExportFormat) -> Self {
        ExportOptions {
            matrices,
            format,
            output: None,
            server: ServerShape::default(),
            eps: crate::matrix::DEFAULT_EPS,
            weights: CostWeights::default(),
            cell: CellChoice::Best,
            gavel_worker: None,
            slurm_table: slurm::DEFAULT_TABLE.into(),
        }
    }

    fn validate(&self) -> Result<(), ExportError> {
        let bad = |m: String| Err(ExportError::Options(m));
        if self.matrices.is_empty() {
            return bad("no matrix given".into());
        }
        if !(self.eps.is_finite() && (0.0..1.0).contains(&self.eps)) {
            return bad(format!("--eps {} must be in [0, 1)", self.eps));
        }
        let w = &self.weights;
        for (name, v) in [("--cpu-weight", w.cpu), ("--mem-weight", w.mem)] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!("{name} {v} must be a non-negative number"));
            }
        }
        if w.cpu == 0.0 && w.mem == 0.0 {
            return bad("--cpu-weight and --mem-weight cannot both be 0".into());
        }
        let s = &self.server;
        if !(s.cpus.is_finite() && s.cpus > 0.0 && s.mem_gb.is_finite() && s.mem_gb > 0.0)
            || s.gpus == 0
        {
            return bad(format!(
                "--server {s}: CPUs, GPUs and GB must all be positive"
            ));
        }
        if let Some(w) = &self.gavel_worker
            && (w.is_empty()
                || !w
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            return bad(format!(
                "--gavel-worker {w:?}: expected a worker type such as v100, p100 or k80"
            ));
        }
        if self.slurm_table.is_empty()
            || self
                .slurm_table
                .chars()
                .any(|c| c.is_control() || c == '"' || c == '\\')
        {
            return bad(format!(
                "--slurm-table {:?}: expected a plain file path",
                self.slurm_table
            ));
        }
        Ok(())
    }
}

/// One input matrix with what every format builds on: its per-GPU throughput surface (first
/// parameter combination) and best-case demand, computed once.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub path: PathBuf,
    pub matrix: Matrix,
    pub surface: Surface,
    pub demand: Demand,
}

impl Prepared {
    pub fn new(path: &Path, matrix: Matrix, opts: &ExportOptions) -> Result<Self, ExportError> {
        let surface = Surface::from_matrix(&matrix).map_err(|source| match source {
            SurfaceError::NoPositiveCell(_) => ExportError::NoPositiveCell {
                path: path.to_owned(),
            },
            error => ExportError::Surface {
                path: path.to_owned(),
                error,
            },
        })?;
        let demand = best_case(&surface, &opts.server, opts.eps, opts.weights)
            .with_alike(&matrix, &surface.params);
        Ok(Prepared {
            path: path.to_owned(),
            matrix,
            surface,
            demand,
        })
    }

    pub fn model(&self) -> &str {
        &self.matrix.header.job.model
    }

    /// GPUs the surface is per: the job's, or one for a CPU-only job.
    pub fn gpus(&self) -> u32 {
        self.matrix.header.job.gpus.max(1)
    }

    /// Per-GPU batch size of the exported parameter combination: a swept `batch` parameter,
    /// else the header's.
    pub fn batch_size(&self) -> Option<u64> {
        self.surface
            .params
            .get("batch")
            .and_then(|b| b.trim().parse::<u64>().ok())
            .or(self.matrix.header.job.batch_size_per_gpu)
            .filter(|&b| b > 0)
    }

    /// The header's validation result as one line (`validated: ...`), if `profiler validate`
    /// recorded one; the cache model the matrix uses is named first.
    pub fn validation_summary(&self) -> Option<String> {
        let h = &self.matrix.header;
        h.validation
            .as_ref()
            .map(|v| v.summary(h.cache_model.as_ref().map(|c| c.kind)))
    }

    /// The batch size, or an error saying why `format` needs it.
    pub fn require_batch(&self, format: &str) -> Result<u64, ExportError> {
        self.batch_size().ok_or_else(|| {
            ExportError::unsupported(
                &self.path,
                format!(
                    "no batch size (header job.batch_size_per_gpu, or a swept `batch` parameter): \
                     {format} counts iterations, which needs samples per iteration"
                ),
            )
        })
    }

    /// `value`, or an error if it is NaN or infinite (so no such number reaches a file).
    pub fn finite(&self, what: &str, value: f64) -> Result<f64, ExportError> {
        if value.is_finite() {
            Ok(value)
        } else {
            Err(ExportError::NonFinite {
                path: self.path.clone(),
                what: what.to_owned(),
                value,
            })
        }
    }
}

/// One output file, rendered in memory. `name` is relative to the output directory for
/// directory formats; one-file formats render exactly one artifact whose name is a suggestion.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    pub name: String,
    pub bytes: Vec<u8>,
}

impl Artifact {
    pub fn text(name: impl Into<String>, text: String) -> Self {
        Artifact {
            name: name.into(),
            bytes: text.into_bytes(),
        }
    }
}

/// What a format rendered: its files and notes for the user (values snapped to a grid,
/// entries left out, and why).
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    pub artifacts: Vec<Artifact>,
    pub notes: Vec<String>,
}

/// Where a format's output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One file (`-o FILE`, or stdout); `binary` ones are not sent to stdout unless `-o -`.
    File { binary: bool },
    /// Several files in the directory `-o DIR`.
    Directory,
}

/// One output format.
pub trait Exporter {
    fn layout(&self) -> Layout;
    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError>;
}

/// What [`export`] did.
#[derive(Debug, Clone, Default)]
pub struct ExportReport {
    /// Files written (empty when the output went to stdout).
    pub written: Vec<PathBuf>,
    pub notes: Vec<String>,
}

/// Loads every matrix and builds its surface and demand.
pub fn prepare_all(opts: &ExportOptions) -> Result<Vec<Prepared>, ExportError> {
    opts.matrices
        .iter()
        .map(|path| Prepared::new(path, load_matrix(path)?, opts))
        .collect()
}

/// Renders `opts.format` in memory.
pub fn render(matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
    let mut rendered = opts.format.exporter().render(matrices, opts)?;
    check_unique_names(&rendered.artifacts)?;
    rendered
        .notes
        .extend(matrices.iter().filter_map(disturbed_note));
    Ok(rendered)
}

/// A note naming a matrix's disturbed cells: their rates are exported as measured (the table
/// formats mark them in `disturbed` and `disturbed_by`), but they are not the job's own.
fn disturbed_note(p: &Prepared) -> Option<String> {
    let cells: Vec<String> = p
        .matrix
        .cells
        .iter()
        .filter(|c| crate::matrix::is_disturbed(c))
        .map(|c| {
            let by = c
                .interference
                .as_ref()
                .and_then(|i| i.disturbed_by.as_deref());
            format!(
                "{} CPUs, {:.2} GB{}",
                c.cpu,
                c.memory_bytes as f64 / 1e9,
                by.map_or(String::new(), |b| format!(" (by {b})"))
            )
        })
        .collect();
    (!cells.is_empty()).then(|| {
        format!(
            "{}: {} cell(s) measured while other load disturbed the job, exported as measured: {}; re-measure them on a quiet machine",
            p.path.display(),
            cells.len(),
            cells.join("; ")
        )
    })
}

/// The whole command: load, render, write to `opts.output` (or `stdout`).
pub fn export(opts: &ExportOptions, stdout: &mut dyn Write) -> Result<ExportReport, ExportError> {
    opts.validate()?;
    let exporter = opts.format.exporter();
    let format = opts.format.name();
    // Check the destination before doing any work.
    let to_stdout = match (exporter.layout(), opts.output.as_deref()) {
        (Layout::File { .. }, Some(p)) if p == Path::new("-") => true,
        (Layout::File { binary: false }, None) => true,
        (Layout::File { binary: true }, None) => {
            return Err(ExportError::Options(format!(
                "--format {format} writes binary data: give -o FILE (or -o - to pipe it)"
            )));
        }
        (Layout::File { .. }, Some(p)) if p.is_dir() => {
            return Err(ExportError::Options(format!(
                "-o {}: is a directory; --format {format} writes one file",
                p.display()
            )));
        }
        (Layout::File { .. }, Some(_)) => false,
        (Layout::Directory, None) => {
            return Err(ExportError::Options(format!(
                "--format {format} writes several files: give -o DIR (created if missing)"
            )));
        }
        (Layout::Directory, Some(p)) if p == Path::new("-") || p.is_file() => {
            return Err(ExportError::Options(format!(
                "-o {}: --format {format} writes several files; give a directory",
                p.display()
            )));
        }
        (Layout::Directory, Some(_)) => false,
    };
    let matrices = prepare_all(opts)?;
    let rendered = render(&matrices, opts)?;
    let mut report = ExportReport {
        written: Vec::new(),
        notes: rendered.notes,
    };
    match (exporter.layout(), opts.output.as_deref()) {
        (Layout::File { .. }, _) if to_stdout => {
            let written = rendered
                .artifacts
                .iter()
                .try_for_each(|a| stdout.write_all(&a.bytes))
                .and_then(|()| stdout.flush());
            match written {
                // The reader stopped early (`| head`): what it read is all it wanted.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                r => r.map_err(ExportError::io(Path::new("<stdout>")))?,
            }
        }
        (Layout::File { .. }, Some(path)) => {
            let bytes: Vec<u8> = rendered
                .artifacts
                .iter()
                .flat_map(|a| a.bytes.iter().copied())
                .collect();
            std::fs::write(path, bytes).map_err(ExportError::io(path))?;
            report.written.push(path.to_owned());
        }
        (_, Some(dir)) => {
            std::fs::create_dir_all(dir).map_err(ExportError::io(dir))?;
            for a in &rendered.artifacts {
                let path = dir.join(&a.name);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(ExportError::io(parent))?;
                }
                std::fs::write(&path, &a.bytes).map_err(ExportError::io(&path))?;
                report.written.push(path);
            }
        }
        (_, None) => unreachable!("checked above: directory formats need -o"),
    }
    Ok(report)
}

fn check_unique_names(artifacts: &[Artifact]) -> Result<(), ExportError> {
    let mut seen = std::collections::BTreeSet::new();
    for a in artifacts {
        if !seen.insert(a.name.as_str()) {
            return Err(ExportError::Options(format!(
                "two outputs are both named {:?}; export those matrices separately",
                a.name
            )));
        }
    }
    Ok(())
}

/// Fails with [`ExportError::Duplicate`] when two matrices map to the same output `key`.
pub(crate) fn unique_by<'a>(
    matrices: &'a [Prepared],
    key: impl Fn(&Prepared) -> String,
) -> Result<(), ExportError> {
    let mut seen: std::collections::BTreeMap<String, &'a Path> = Default::default();
    for p in matrices {
        let k = key(p);
        if let Some(first) = seen.insert(k.clone(), &p.path) {
            return Err(ExportError::Duplicate {
                name: k,
                first: first.to_owned(),
                second: p.path.clone(),
            });
        }
    }
    Ok(())
}

/// A number to 6 significant digits, shortest form, no trailing zeros (`0.37`, not
/// `0.37000000000000005`; `125`, not `125.0`), so values that were table entries come back as
/// they were written.
pub fn fmt_sig6(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{}", if x == 0.0 { 0.0 } else { x });
    }
    let rounded: f64 = format!("{x:.5e}").parse().unwrap_or(x);
    format!("{rounded}")
}

/// `value` rounded up to a whole number, ignoring float noise just above an integer
/// (3.0000000000000004 CPUs is 3, not 4).
pub fn ceil_whole(value: f64) -> u64 {
    let nearest = value.round();
    if (value - nearest).abs() <= 1e-9 * nearest.abs().max(1.0) {
        nearest.max(0.0) as u64
    } else {
        value.ceil().max(0.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sig6_trims_float_noise_and_zeros() {
        assert_eq!(fmt_sig6(0.37000000000000005), "0.37");
        assert_eq!(fmt_sig6(2.94 * 800.0 / 800.0), "2.94");
        assert_eq!(fmt_sig6(125.0), "125");
        assert_eq!(fmt_sig6(20.83), "20.83");
        assert_eq!(fmt_sig6(1.0 / 3.0), "0.333333");
        assert_eq!(fmt_sig6(1234567.0), "1234570");
        assert_eq!(fmt_sig6(0.0), "0");
        assert_eq!(fmt_sig6(-0.0), "0");
        assert_eq!(fmt_sig6(0.000123456789), "0.000123457");
    }

    #[test]
    fn ceil_whole_ignores_noise() {
        assert_eq!(ceil_whole(3.0000000000000004), 3);
        assert_eq!(ceil_whole(3.01), 4);
        assert_eq!(ceil_whole(0.2), 1);
        assert_eq!(ceil_whole(0.0), 0);
        assert_eq!(ceil_whole(59604.64477539063), 59605);
    }
}
