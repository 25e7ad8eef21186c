//! A matrix as a per-GPU throughput surface: what one GPU's share of the job achieves at
//! `c` cores and `m` GB per GPU. Schedulers (Synergy, the replay, the exporters) think per GPU;
//! a matrix is per job, so levels and rates are divided by the job's GPU count (linear scaling
//! in GPUs, as Synergy's simulator assumes). A CPU-only matrix (`gpus = 0`, e.g. the shipped
//! input pipeline, whose accelerator is emulated) is taken as one accelerator.
//!
//! The grid is made monotone first (a cell is at least as fast as any cell with less of both
//! resources: a job can leave extra resources idle); failed and infeasible cells count 0 and
//! missing cells are filled from the cells they dominate.

use super::{CellSource, Matrix};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// GB as the surface counts memory (schedulers' GB, 1e9 bytes, as Synergy's tables).
pub const BYTES_PER_GB: f64 = 1e9;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SurfaceError {
    #[error("matrix {0:?} has no cells")]
    NoCells(String),
    #[error(
        "matrix {model:?}: a cell has a non-positive CPU or memory level ({cpu} cores, {memory_bytes} bytes)"
    )]
    BadLevel {
        model: String,
        cpu: f64,
        memory_bytes: u64,
    },
    #[error(
        "matrix {model:?}: the cell at {cpu} cores, {memory_bytes} bytes has throughput {value}"
    )]
    BadThroughput {
        model: String,
        cpu: f64,
        memory_bytes: u64,
        value: f64,
    },
    #[error("matrix {0:?}: no cell has a positive throughput")]
    NoPositiveCell(String),
}

/// A server shape, `CPUS:GPUS:GB` (Synergy's default server is `24:8:500`): what a
/// GPU-proportional share is (CPUs and GB per GPU).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerShape {
    pub cpus: f64,
    pub gpus: u32,
    pub mem_gb: f64,
}

impl Default for ServerShape {
    fn default() -> Self {
        ServerShape {
            cpus: 24.0,
            gpus: 8,
            mem_gb: 500.0,
        }
    }
}

impl ServerShape {
    /// CPUs per GPU of a GPU-proportional share.
    pub fn share_cpus(&self) -> f64 {
        self.cpus / self.gpus as f64
    }

    /// GB per GPU of a GPU-proportional share.
    pub fn share_mem_gb(&self) -> f64 {
        self.mem_gb / self.gpus as f64
    }
}

impl FromStr for ServerShape {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let expected = "expected CPUS:GPUS:GB, e.g. 24:8:500 (24 CPUs, 8 GPUs, 500 GB)";
        let parts: Vec<&str> = s.split(':').map(str::trim).collect();
        let [cpus, gpus, mem] = parts[..] else {
            return Err(format!("{s:?}: {expected}"));
        };
        let positive = |v: &str, what: &str| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0 && *x <= 1e9)
                .ok_or_else(|| format!("{s:?}: {what} {v:?} is not a positive number; {expected}"))
        };
        let cpus = positive(cpus, "CPUS")?;
        let gpus = gpus
            .parse::<u32>()
            .ok()
            .filter(|g| (1..=1_000_000).contains(g))
            .ok_or_else(|| {
                format!("{s:?}: GPUS {gpus:?} is not a whole number >= 1; {expected}")
            })?;
        let mem_gb = positive(mem, "GB")?;
        Ok(ServerShape { cpus, gpus, mem_gb })
    }
}

impl fmt::Display for ServerShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.cpus, self.gpus, self.mem_gb)
    }
}

/// How a surface is read between grid points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interp {
    /// Bilinear over the grid cell containing the point; clamped above the largest level of an
    /// axis; below the smallest level, falling linearly to 0 at 0.
    Bilinear,
    /// The largest grid point at or below the point on both axes (Synergy's lookup, which only
    /// ever asks for grid points); below the grid, linear to 0 as above.
    Step,
}

/// Per-GPU throughput surface of one parameter combination of a matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    pub model: String,
    /// GPUs the levels and rates were divided by (the job's GPUs, 1 for a CPU-only job).
    pub gpus: u32,
    /// CPU levels, cores per GPU, ascending.
    pub cpu: Vec<f64>,
    /// Memory levels, GB per GPU, ascending.
    pub mem: Vec<f64>,
    /// Per-GPU samples/s, row-major `[ci * mem.len() + mi]`, monotone in both axes.
    pub tput: Vec<f64>,
    /// The parameter combination the surface is of (empty when the matrix sweeps none).
    pub params: BTreeMap<String, String>,
}

impl Surface {
    /// The surface of the cells without parameters, or else of the first combination in
    /// sorted order.
    pub fn from_matrix(m: &Matrix) -> Result<Surface, SurfaceError> {
        let params = m
            .cells
            .iter()
            .map(|c| &c.params)
            .min()
            .cloned()
            .unwrap_or_default();
        Self::from_matrix_params(m, &params)
    }

    /// The surface of the cells with exactly `params`.
    pub fn from_matrix_params(
        m: &Matrix,
        params: &BTreeMap<String, String>,
    ) -> Result<Surface, SurfaceError> {
        let model = m.header.job.model.clone();
        let g = m.header.job.gpus.max(1);
        let gf = g as f64;
        let cells: Vec<_> = m.cells.iter().filter(|c| &c.params == params).collect();
        if cells.is_empty() {
            return Err(SurfaceError::NoCells(model));
        }
        for c in &cells {
            if !c.cpu.is_finite() || c.cpu <= 0.0 || c.memory_bytes == 0 {
                return Err(SurfaceError::BadLevel {
                    model,
                    cpu: c.cpu,
                    memory_bytes: c.memory_bytes,
                });
            }
        }
        let per_gpu_mem = |bytes: u64| bytes as f64 / BYTES_PER_GB / gf;
        let mut cpu: Vec<f64> = cells.iter().map(|c| c.cpu / gf).collect();
        let mut mem: Vec<f64> = cells.iter().map(|c| per_gpu_mem(c.memory_bytes)).collect();
        for v in [&mut cpu, &mut mem] {
            v.sort_by(f64::total_cmp);
            v.dedup_by(|a, b| same_level(*a, *b));
        }
        let nm = mem.len();
        let mut tput = vec![f64::NAN; cpu.len() * nm];
        let index = |levels: &[f64], x: f64| {
            Surface::level_index(levels, x).expect("level collected from the same cells")
        };
        // The shape from the relative rates where every rate has one: cells measured close
        // together in time are steadier against each other than launches are.
        let scale = super::relative::absolute_scale(&cells);
        for c in &cells {
            let ci = index(&cpu, c.cpu / gf);
            let mi = index(&mem, per_gpu_mem(c.memory_bytes));
            let v = match (c.source, scale) {
                (CellSource::Failed | CellSource::Infeasible, _) => 0.0,
                (_, Some(scale)) => c.relative.as_ref().map_or(0.0, |r| r.rate) * scale / gf,
                (_, None) => c.samples_per_s().unwrap_or(0.0) / gf,
            };
            if !v.is_finite() || v < 0.0 {
                return Err(SurfaceError::BadThroughput {
                    model,
                    cpu: c.cpu,
                    memory_bytes: c.memory_bytes,
                    value: v,
                });
            }
            let slot = &mut tput[ci * nm + mi];
            *slot = if slot.is_nan() { v } else { slot.max(v) };
        }
        // Monotone fill: missing cells take the best dominated cell (0 if none).
        for ci in 0..cpu.len() {
            for mi in 0..nm {
                let mut v = tput[ci * nm + mi];
                if v.is_nan() {
                    v = 0.0;
                }
                if ci > 0 {
                    v = v.max(tput[(ci - 1) * nm + mi]);
                }
                if mi > 0 {
                    v = v.max(tput[ci * nm + mi - 1]);
                }
                tput[ci * nm + mi] = v;
            }
        }
        let surface = Surface {
            model,
            gpus: g,
            cpu,
            mem,
            tput,
            params: params.clone(),
        };
        if surface.max() <= 0.0 {
            return Err(SurfaceError::NoPositiveCell(surface.model));
        }
        Ok(surface)
    }

    /// Per-GPU samples/s at grid point `(ci, mi)`.
    pub fn on_grid(&self, ci: usize, mi: usize) -> f64 {
        self.tput[ci * self.mem.len() + mi]
    }

    /// The best per-GPU samples/s anywhere on the grid.
    pub fn max(&self) -> f64 {
        self.tput.iter().copied().fold(0.0, f64::max)
    }

    /// Per-GPU samples/s at `cpus_per_gpu` cores and `mem_gb_per_gpu` GB per GPU.
    pub fn at(&self, cpus_per_gpu: f64, mem_gb_per_gpu: f64, interp: Interp) -> f64 {
        let (c, m) = (cpus_per_gpu, mem_gb_per_gpu);
        match interp {
            Interp::Step => {
                let (ci, cf) = floor_level(&self.cpu, c);
                let (mi, mf) = floor_level(&self.mem, m);
                self.on_grid(ci, mi) * cf * mf
            }
            Interp::Bilinear => {
                let (c0, c1, wc, cf) = bracket(&self.cpu, c);
                let (m0, m1, wm, mf) = bracket(&self.mem, m);
                let v = self.on_grid(c0, m0) * (1.0 - wc) * (1.0 - wm)
                    + self.on_grid(c1, m0) * wc * (1.0 - wm)
                    + self.on_grid(c0, m1) * (1.0 - wc) * wm
                    + self.on_grid(c1, m1) * wc * wm;
                v * cf * mf
            }
        }
    }

    /// Index of a grid level equal to `x` (within rounding), if any.
    pub fn level_index(levels: &[f64], x: f64) -> Option<usize> {
        levels.iter().position(|&l| same_level(l, x))
    }
}

/// Levels closer than a part in a billion are the same (GB from bytes, cores from milli-cores).
pub fn same_level(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Index of the largest level <= x, and a factor < 1 when x is below the smallest level.
fn floor_level(levels: &[f64], x: f64) -> (usize, f64) {
    let eps = 1e-9;
    match levels.iter().rposition(|&l| l <= x * (1.0 + eps) + eps) {
        Some(i) => (i, 1.0),
        None => (0, below_factor(levels[0], x)),
    }
}

/// Bracketing levels, the weight of the upper one, and a factor < 1 below the smallest level.
fn bracket(levels: &[f64], x: f64) -> (usize, usize, f64, f64) {
    let n = levels.len();
    if x.is_nan() || x <= levels[0] {
        return (0, 0, 0.0, below_factor(levels[0], x));
    }
    if x >= levels[n - 1] {
        return (n - 1, n - 1, 0.0, 1.0);
    }
    let hi = levels.partition_point(|&l| l <= x);
    let lo = hi - 1;
    let w = (x - levels[lo]) / (levels[hi] - levels[lo]);
    (lo, hi, w, 1.0)
}

fn below_factor(lowest: f64, x: f64) -> f64 {
    let f = x / lowest;
    if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Cell;
    use crate::matrix::fixtures::{cell, header};
    use proptest::prelude::*;

    fn measured(cpu: f64, gb: f64, rate: f64) -> Cell {
        crate::matrix::fixtures::measured(cpu, (gb * 1e9) as u64, rate, None)
    }

    fn matrix(gpus: u32, cells: Vec<Cell>) -> Matrix {
        let mut h = header("m");
        h.job.gpus = gpus;
        Matrix { header: h, cells }
    }

    #[test]
    fn server_shape_parses_and_rejects() {
        let s: ServerShape = "24:8:500".parse().unwrap();
        assert_eq!((s.share_cpus(), s.share_mem_gb()), (3.0, 62.5));
        assert_eq!(s, ServerShape::default());
        assert_eq!(s.to_string(), "24:8:500");
        for bad in [
            "24:8",
            "24:0:500",
            "x:8:500",
            "24:8:-1",
            "24:8:nan",
            "24:2.5:500",
            "",
        ] {
            let e = bad.parse::<ServerShape>().unwrap_err();
            assert!(e.contains("CPUS:GPUS:GB"), "{bad}: {e}");
        }
    }

    #[test]
    fn per_gpu_levels_and_monotone_fill() {
        // A 2-GPU job: levels and rates halve; the failed cell at (4 cores, 20 GB) is 0 but
        // the monotone fill lifts it to the dominated (2 cores, 20 GB) cell.
        let mut failed = cell(4.0);
        failed.memory_bytes = 20_000_000_000;
        let m = matrix(
            2,
            vec![
                measured(2.0, 20.0, 100.0),
                measured(2.0, 40.0, 120.0),
                failed,
                measured(4.0, 40.0, 200.0),
            ],
        );
        let s = Surface::from_matrix(&m).unwrap();
        assert_eq!(s.cpu, vec![1.0, 2.0]);
        assert_eq!(s.mem, vec![10.0, 20.0]);
        assert_eq!(s.tput, vec![50.0, 60.0, 50.0, 100.0]);
        assert_eq!(s.max(), 100.0);
        // Bilinear half-way, clamped above, linear to 0 below.
        assert_eq!(s.at(1.5, 20.0, Interp::Bilinear), 80.0);
        assert_eq!(s.at(8.0, 100.0, Interp::Bilinear), 100.0);
        assert_eq!(s.at(0.5, 10.0, Interp::Bilinear), 25.0);
        // Step: the grid point at or below.
        assert_eq!(s.at(1.9, 19.0, Interp::Step), 50.0);
    }

    #[test]
    fn cpu_only_matrices_are_one_accelerator_and_bad_cells_are_errors() {
        let s = Surface::from_matrix(&matrix(0, vec![measured(0.5, 0.1, 300.0)])).unwrap();
        assert_eq!(
            (s.gpus, s.cpu.clone(), s.tput.clone()),
            (1, vec![0.5], vec![300.0])
        );
        let e = Surface::from_matrix(&matrix(1, vec![measured(0.0, 1.0, 1.0)])).unwrap_err();
        assert!(matches!(e, SurfaceError::BadLevel { .. }), "{e}");
        let e = Surface::from_matrix(&matrix(1, vec![measured(1.0, 1.0, f64::NAN)])).unwrap_err();
        assert!(matches!(e, SurfaceError::BadThroughput { .. }), "{e}");
        let e = Surface::from_matrix(&matrix(1, vec![cell(1.0)])).unwrap_err();
        assert_eq!(e, SurfaceError::NoPositiveCell("m".into()));
        let e = Surface::from_matrix(&matrix(1, vec![])).unwrap_err();
        assert_eq!(e, SurfaceError::NoCells("m".into()));
    }

    proptest! {
        #[test]
        fn server_shapes_parse_without_panics_and_round_trip(
            text in "\\PC{0,24}",
            cpus in 1u32..100_000,
            gpus in 1u32..1000,
            mem in 1u32..1_000_000,
        ) {
            if let Ok(s) = text.parse::<ServerShape>() {
                prop_assert!(s.share_cpus() > 0.0 && s.share_mem_gb().is_finite());
            }
            let s: ServerShape = format!("{cpus}:{gpus}:{mem}").parse().unwrap();
            prop_assert_eq!(s.to_string().parse::<ServerShape>().unwrap(), s);
        }

        #[test]
        fn interpolation_is_monotone_and_bounded(
            rates in proptest::collection::vec(0.0f64..1e4, 9),
            c1 in 0.0f64..10.0, c2 in 0.0f64..10.0,
            m1 in 0.0f64..100.0, m2 in 0.0f64..100.0,
        ) {
            let mut cells = Vec::new();
            for (i, &r) in rates.iter().enumerate() {
                cells.push(measured([1.0, 2.0, 4.0][i / 3], [10.0, 20.0, 40.0][i % 3], r + 1.0));
            }
            let s = Surface::from_matrix(&matrix(1, cells)).unwrap();
            for interp in [Interp::Bilinear, Interp::Step] {
                let lo = s.at(c1.min(c2), m1.min(m2), interp);
                let hi = s.at(c1.max(c2), m1.max(m2), interp);
                prop_assert!(lo.is_finite() && lo >= 0.0);
                prop_assert!(lo <= hi * (1.0 + 1e-12) + 1e-9, "{lo} > {hi}");
                prop_assert!(hi <= s.max() * (1.0 + 1e-12));
            }
        }
    }
}
