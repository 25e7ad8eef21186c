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

/// Converts the zoo: returns `(cpus_per_gpu_proportional, matrix)` for every shape and model.
pub fn convert(matrices_csv: &Path, scalars_csv: &Path) -> Result<Vec<(u32, Matrix)>, ReplayError> {
    // (shape, model) -> (batch size, iteration time at proportional)
    let mut scalars: BTreeMap<(u32, String), (u64, f64)> = BTreeMap::new();
    for (line, f) in read_csv(scalars_csv)? {
        if f.len() != 8 {
            return Err(ReplayError::parse(scalars_csv, line, "expected 8 columns"));
        }
        let shape = num(scalars_csv, line, &f[0], "shape")? as u32;
        let iter_s = num(scalars_csv, line, &f[5], "iter_time_s_at_proportional")?;
        let batch = num(scalars_csv, line, &f[6], "batch_size")? as u64;
        scalars.insert((shape, f[1].clone()), (batch, iter_s));
    }
    type Points = Vec<(f64, f64, f64)>;
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
    let mut out = Vec::new();
    for ((shape, zoo_name), pts) in cells {
        let Some(&(batch, iter_s)) = scalars.get(&(shape, zoo_name.clone())) else {
            return Err(ReplayError::Profile(format!(
                "{}: no scalars for model {zoo_name} at {shape} CPUs/GPU",
                scalars_csv.display()
            )));
        };
        let name = canonical_name(&zoo_name).to_owned();
        let per_unit = batch as f64 / iter_s;
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
        let header = MatrixHeader {
            kind: MATRIX_KIND.into(),
            schema_version: SCHEMA_VERSION,
            job: JobInfo {
                name: name.clone(),
                model: name.clone(),
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
            cache_model: None,
            validation: None,
            live_check: None,
            launch_spread: None,
            blocks: Vec::new(),
        };
        let cells = pts
            .iter()
            .map(|&(c, m, t)| {
                let sps = t * per_unit;
                Cell {
                    cpu: c,
                    memory_bytes: (m * 1e9).round() as u64,
                    params: BTreeMap::new(),
                    source: CellSource::Modelled,
                    throughput: Some(Throughput {
                        samples_per_s: sps,
                        ci95_low: sps,
                        ci95_high: sps,
                        windows: 0,
                        measured_s: 0.0,
                        launches: Vec::new(),
                    }),
                    iteration_time_s: None,
                    telemetry: None,
                    gpu: None,
                    note: Some(format!(
                        "Synergy zoo normalized_throughput {t} (optimistic profiling: CPU axis \
                         measured, memory axis modelled)"
                    )),
                    wall_s: 0.0,
                    node: None,
                    interference: None,
                    relative: None,
                    visits: Vec::new(),
                    measured_unix_s: None,
                    left_out_unix_s: Vec::new(),
                }
            })
            .collect();
        out.push((shape, Matrix { header, cells }));
    }
    Ok(out)
}

/// Relative directory of a shape's matrices (`matrices/zoo` for the default 3 CPUs per GPU).
pub fn shape_dir(shape: u32) -> String {
    if shape == 3 {
        "matrices/zoo".into()
    } else {
        format!("matrices/zoo-cpg{shape}")
    }
}
