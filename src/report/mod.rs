//! `profiler report`: static, self-contained HTML pages of matrices, one a matrix and an index
//! when there are several; they open from `file://` with no network (see [`html`]).
//!
//! The charts on a page are the ones `profiler plot` writes (the same drawing code, inline SVG),
//! so the page and the PNGs agree.

pub mod html;
mod index;
mod matrix_page;
mod runs_page;

pub use index::OVERVIEW_MAX_LINES;
pub use matrix_page::worst_half_width_pct;

use crate::matrix::{CostWeights, MatrixError, ServerShape, SurfaceError, load_matrix};
use crate::plot::PlotError;
use crate::plot::sensitivity::{PlotOptions, SensitivityError, View, sanitize, unique_name};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Files a folder given to `report` is read for.
const MATRIX_SUFFIX: &str = ".matrix.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error(transparent)]
    Chart(#[from] SensitivityError),
    #[error(transparent)]
    Plot(#[from] PlotError),
    #[error("{job}: {source}")]
    Surface { job: String, source: SurfaceError },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: no *{MATRIX_SUFFIX} file in this folder, and no deploy's or replay's tables")]
    EmptyFolder { path: PathBuf },
    #[error("{path}: {message}")]
    Table { path: PathBuf, message: String },
    #[error(transparent)]
    Journal(#[from] crate::deploy::DeployError),
}

impl ReportError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
        move |source| ReportError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// Where the pages go and what the demand is measured against.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    pub out_dir: PathBuf,
    pub server: ServerShape,
    pub eps: f64,
    pub weights: CostWeights,
}

impl ReportOptions {
    fn plot_options(&self) -> PlotOptions {
        PlotOptions {
            out_dir: self.out_dir.clone(),
            normalize: false,
            server: self.server,
            eps: self.eps,
            weights: self.weights,
        }
    }
}

/// What the index says of one matrix's page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageSummary {
    /// The page's file name, beside the index.
    pub page: String,
    pub job: String,
    pub model: String,
    pub machine_kind: String,
    /// The first parameter combination's best case, per GPU.
    pub cpus_per_gpu: Option<f64>,
    pub mem_gb_per_gpu: Option<f64>,
    pub speedup: Option<f64>,
    /// Allocations its intervals cannot tell apart from the best case.
    pub alike: usize,
    pub worst_half_width_pct: Option<f64>,
    pub measured: usize,
    pub cells: usize,
    /// Its relative view, for the index's overview chart.
    pub overview: Option<View>,
}

/// The files `paths` name: matrix files as given, folders for their `*.matrix.jsonl` files.
pub fn matrix_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ReportError> {
    let mut files = Vec::new();
    for p in paths {
        if !p.is_dir() {
            files.push(p.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(ReportError::io(p))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                (f.file_name().and_then(|n| n.to_str())).is_some_and(|n| n.ends_with(MATRIX_SUFFIX))
            })
            .collect();
        if found.is_empty() {
            return Err(ReportError::EmptyFolder { path: p.clone() });
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// Writes a page per matrix, deploy and replay into `opts.out_dir` and, for several pages,
/// `index.html`; returns the files written, the index (or the only page) first. A folder
/// stands for a deploy's or a replay's `--out` where it holds their tables, else for its
/// matrix files. `progress` is called after each matrix's page.
pub fn write_report(
    paths: &[PathBuf],
    opts: &ReportOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<PathBuf>, ReportError> {
    let (runs, matrices): (Vec<PathBuf>, Vec<PathBuf>) =
        (paths.iter().cloned()).partition(|p| runs_page::is_deploy(p) || runs_page::is_replay(p));
    let files = matrix_files(&matrices)?;
    std::fs::create_dir_all(&opts.out_dir).map_err(ReportError::io(&opts.out_dir))?;
    let mut used = HashSet::new();
    let mut run_pages = Vec::with_capacity(runs.len());
    for dir in &runs {
        let html = match runs_page::is_deploy(dir) {
            true => runs_page::deploy_page(dir)?,
            false => runs_page::replay_page(dir)?,
        };
        let stem = (dir.file_name().and_then(|n| n.to_str())).unwrap_or("run");
        let name = unique_name(&mut used, &format!("{}.run", sanitize(stem)));
        let out = opts.out_dir.join(format!("{name}.html"));
        std::fs::write(&out, html).map_err(ReportError::io(&out))?;
        run_pages.push(out);
    }
    let mut pages = Vec::with_capacity(files.len());
    let mut written = Vec::with_capacity(files.len() + 1);
    for (k, path) in files.iter().enumerate() {
        let m = load_matrix(path)?;
        let name = unique_name(&mut used, &page_stem(path, &m.header.job.name));
        let (html, summary) = matrix_page::matrix_page(path, &m, &name, opts)?;
        let out = opts.out_dir.join(&summary.page);
        std::fs::write(&out, html).map_err(ReportError::io(&out))?;
        written.push(out);
        pages.push(summary);
        progress(k + 1, files.len());
    }
    let run_names: Vec<String> = (run_pages.iter())
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
        .collect();
    written.splice(0..0, run_pages);
    if written.len() > 1 {
        let out = opts.out_dir.join("index.html");
        let html = index::index_page(&pages, &run_names, opts)?;
        std::fs::write(&out, html).map_err(ReportError::io(&out))?;
        written.insert(0, out);
    }
    Ok(written)
}

/// A page's name: the matrix file's name without `.matrix.jsonl`, else the job's.
fn page_stem(path: &Path, job: &str) -> String {
    let file = path.file_name().and_then(|n| n.to_str()).unwrap_or(job);
    let stem = file.strip_suffix(MATRIX_SUFFIX).unwrap_or(job);
    let name = sanitize(stem);
    if name == "index" {
        format!("{name}-job")
    } else {
        name
    }
}

#[cfg(test)]
mod tests;
