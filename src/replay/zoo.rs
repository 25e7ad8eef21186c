//! Converter from Synergy's published model-zoo tables (long-form CSV, see
//! `matrices/zoo-source/README.md`) to our matrix schema. The produced files are committed
//! under `matrices/zoo/` (the default server shape, 3 CPUs per GPU) and
//! `matrices/zoo-cpg{4,5,6}/`; `tests/replay/main.rs` regenerates them (`--ignored zoo_generate`) and
//! checks that the committed ones match.
//!
//! Absolute samples/s = normalized_throughput x batch_size / iter_time_s_at_proportional;
//! memory_bytes = GB x 1e9; model names `res18`/`res50` become `resnet18`/`resnet50`.

use super::error::ReplayError;
use crate::matrix::{
    Axes, Cell, CellSource, JobInfo, MATRIX_KIND, Matrix, MatrixHeader, SCHEMA_VERSION, Throughput,
};
use std::collections::BTreeMap;
use std::path::Path;

pub use super::model_names::canonical_name;

fn read_csv(path: &Path) -> Result<Vec<(usize, Vec<String>)>, ReplayError> {
    let text = std::fs::read_to_string(path).map_err(ReplayError::io(path))?;
    Ok(text
        .lines()
        .enumerate()
        .skip(1)
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l.split(',').map(|s| s.trim().to_owned()).collect()))
        .collect())
}

fn num(path: &Path, line: usize, s: &str, what: &str) -> Result<f64, ReplayError> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| ReplayError::parse(path, line, format!("{what} {s:?} is not a number")))
}

/// A model's scalars in the zoo: the batch size and the iteration time at the proportional
/// share, which turn a normalised throughput into samples/s.
#[derive(Debug, Clone, Copy)]
struct Scalars {
    batch: u64,
    iter_s: f64,
}

/// A model's table in the zoo: (cpus_per_gpu, mem_gb_per_gpu, normalized_throughput) rows.
type Points = Vec<(f64, f64, f64)>;

/// Converts the zoo: returns `(cpus_per_gpu_proportional, matrix)` for every shape and model.
pub fn convert(matrices_csv: &Path, scalars_csv: &Path) -> Result<Vec<(u32, Matrix)>, ReplayError> {
    let scalars = read_scalars(scalars_csv)?;
    let cells = read_points(matrices_csv)?;
    let mut out = Vec::new();
    for ((shape, zoo_name), pts) in cells {
        let Some(&sc) = scalars.get(&(shape, zoo_name.clone())) else {
            return Err(ReplayError::Profile(format!(
                "{}: no scalars for model {zoo_name} at {shape} CPUs/GPU",
                scalars_csv.display()
            )));
        };
        out.push((shape, zoo_matrix(shape, &zoo_name, &pts, sc)));
    }
    Ok(out)
}

/// The scalars file: (shape, model) -> its [`Scalars`].
fn read_scalars(scalars_csv: &Path) -> Result<BTreeMap<(u32, String), Scalars>, ReplayError> {
    let mut scalars = BTreeMap::new();
    for (line, f) in read_csv(scalars_csv)? {
        if f.len() != 8 {
            return Err(ReplayError::parse(scalars_csv, line, "expected 8 columns"));
        }
        let shape = num(scalars_csv, line, &f[0], "shape")? as u32;
        let iter_s = num(scalars_csv, line, &f[5], "iter_time_s_at_proportional")?;
        let batch = num(scalars_csv, line, &f[6], "batch_size")? as u64;
        scalars.insert((shape, f[1].clone()), Scalars { batch, iter_s });
    }
    Ok(scalars)
}

/// The matrices file: (shape, model) -> its table's rows, in file order.
fn read_points(matrices_csv: &Path) -> Result<BTreeMap<(u32, String), Points>, ReplayError> {
    let mut cells: BTreeMap<(u32, String), Points> = BTreeMap::new();
    for (line, f) in read_csv(matrices_csv)? {
        if f.len() != 5 {
            return Err(ReplayError::parse(matrices_csv, line, "expected 5 columns"));
        }
        let shape = num(matrices_csv, line, &f[0], "shape")? as u32;
        let c = num(matrices_csv, line, &f[2], "cpus_per_gpu")?;
        let m = num(matrices_csv, line, &f[3], "mem_gb_per_gpu")?;
        let t = num(matrices_csv, line, &f[4], "normalized_throughput")?;
        cells
            .entry((shape, f[1].clone()))
            .or_default()
            .push((c, m, t));
    }
    Ok(cells)
}

/// One model's matrix at one shape: its header, then a modelled cell per row of its table.
fn zoo_matrix(shape: u32, zoo_name: &str, pts: &[(f64, f64, f64)], sc: Scalars) -> Matrix {
    let per_unit = sc.batch as f64 / sc.iter_s;
    let header = zoo_header(shape, zoo_name, pts, sc);
    let cells = pts
        .iter()
        .map(|&(c, m, t)| zoo_cell(c, m, t, t * per_unit))
        .collect();
    Matrix { header, cells }
}

/// The header of a model's matrix: a one-GPU job, its axes the table's CPU and memory values,
/// its provenance how the zoo's numbers were converted.
fn zoo_header(shape: u32, zoo_name: &str, pts: &[(f64, f64, f64)], sc: Scalars) -> MatrixHeader {
    let Scalars { batch, iter_s } = sc;
    let name = canonical_name(zoo_name).to_owned();
    let mut cpu: Vec<f64> = pts.iter().map(|p| p.0).collect();
    cpu.sort_by(f64::total_cmp);
    cpu.dedup();
    let mut mem: Vec<u64> = pts.iter().map(|p| (p.1 * 1e9).round() as u64).collect();
    mem.sort();
    mem.dedup();
    let provenance = format!(
        "Synergy (OSDI'22) model zoo, msr-fiddle/synergy (MIT licence), table for a \
         proportional share of {shape} CPUs per GPU (default server: 24 CPUs, 8 GPUs, \
         500 GB); per-GPU table of a one-GPU job; samples/s = normalized_throughput x \
         batch_size ({batch}) / iter_time_s_at_proportional ({iter_s} s); memory_bytes = \
         GB x 1e9; original model name {zoo_name:?}; converted by profiler::replay::zoo"
    );
    MatrixHeader {
        kind: MATRIX_KIND.into(),
        schema_version: SCHEMA_VERSION,
        job: JobInfo {
            name: name.clone(),
            model: name,
            gpus: 1,
            batch_size_per_gpu: Some(batch),
            dataset_bytes: None,
            dataset_samples: None,
        },
        machine: None,
        axes: Axes {
            cpu,
            memory_bytes: mem,
            params: BTreeMap::new(),
        },
        created_unix_s: 0,
        provenance: Some(provenance),
        profiler: None,
        cache_model: None,
        validation: None,
        live_check: None,
        launch_spread: None,
        blocks: Vec::new(),
        read_at_probe_speed: None,
    }
}

/// A modelled cell at `c` cores and `m` GB per GPU, running at `sps` samples/s (the zoo's
/// normalised throughput `t` converted).
fn zoo_cell(c: f64, m: f64, t: f64, sps: f64) -> Cell {
    Cell {
        throughput: Some(Throughput {
            samples_per_s: sps,
            ci95_low: sps,
            ci95_high: sps,
            windows: 0,
            measured_s: 0.0,
            launches: Vec::new(),
        }),
        note: Some(format!(
            "Synergy zoo normalized_throughput {t} (optimistic profiling: CPU axis \
             measured, memory axis modelled)"
        )),
        ..Cell::at(
            c,
            (m * 1e9).round() as u64,
            BTreeMap::new(),
            CellSource::Modelled,
        )
    }
}

/// Relative directory of a shape's matrices (`matrices/zoo` for the default 3 CPUs per GPU).
pub fn shape_dir(shape: u32) -> String {
    if shape == 3 {
        "matrices/zoo".into()
    } else {
        format!("matrices/zoo-cpg{shape}")
    }
}
