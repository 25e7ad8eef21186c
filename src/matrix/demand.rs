//! Best-case demand: the least CPU and memory per GPU that gives (nearly) the best throughput,
//! and how much faster that is than a GPU-proportional share. These are the numbers a
//! Synergy-style scheduler consumes (Synergy's model zoo calls them `cpus`, `mem`, `speedup`).
//!
//! Only grid points are candidates: a measured (or modelled) level is a promise, an interpolated
//! one is not. Among the points reaching `(1 - eps)` of the best throughput, the one with the
//! least cost `w_cpu * c / share_cpus + w_mem * m / share_mem` wins, where the share is the
//! server's GPU-proportional share, so one share of CPU costs as much as one share of memory
//! at equal weights; ties go to fewer CPUs.

use super::surface::{BYTES_PER_GB, Interp, ServerShape, Surface, SurfaceError, same_level};
use super::{Cell, Matrix};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Default tolerance: a point within 2% of the best counts as best (below the 95% interval of
/// a typical steady-state measurement, so noise does not buy extra cores).
pub const DEFAULT_EPS: f64 = 0.02;

/// Relative price of CPU and memory in the cost a best-case demand minimises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostWeights {
    pub cpu: f64,
    pub mem: f64,
}

impl Default for CostWeights {
    fn default() -> Self {
        CostWeights { cpu: 1.0, mem: 1.0 }
    }
}

/// A matrix's best-case demand, per GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Demand {
    pub cpus_per_gpu: f64,
    pub mem_gb_per_gpu: f64,
    /// Throughput at the demand, per GPU.
    pub samples_per_s_per_gpu: f64,
    /// The best throughput anywhere on the grid, per GPU.
    pub best_samples_per_s_per_gpu: f64,
    /// Throughput at the proportional share of the server shape (interpolated), per GPU.
    pub proportional_samples_per_s_per_gpu: f64,
    /// `samples_per_s_per_gpu / proportional_samples_per_s_per_gpu` (0 when the share gives 0).
    pub speedup_over_proportional: f64,
    pub eps: f64,
    pub shape: ServerShape,
    /// Other allocations (CPUs, GB per GPU) whose relative rate's interval overlaps the
    /// demand's: the blocks cannot tell them apart from it ([`Demand::with_alike`]). Empty
    /// without relative rates.
    pub alike: Vec<[f64; 2]>,
}

impl Demand {
    /// The demand with [`Demand::alike`] filled from `m`'s cells of `params`.
    pub fn with_alike(mut self, m: &Matrix, params: &BTreeMap<String, String>) -> Demand {
        let g = m.header.job.gpus.max(1) as f64;
        let per_gpu = |c: &Cell| [c.cpu / g, c.memory_bytes as f64 / BYTES_PER_GB / g];
        let cells: Vec<&Cell> = m.cells.iter().filter(|c| &c.params == params).collect();
        let is_chosen = |c: &Cell| {
            let [cpu, mem] = per_gpu(c);
            same_level(cpu, self.cpus_per_gpu) && same_level(mem, self.mem_gb_per_gpu)
        };
        let Some(chosen) = cells
            .iter()
            .find(|c| is_chosen(c))
            .and_then(|c| c.relative.clone())
        else {
            return self;
        };
        self.alike = cells
            .iter()
            .filter(|c| !is_chosen(c))
            .filter(|c| {
                c.relative.as_ref().is_some_and(|r| {
                    r.ci95_low <= chosen.ci95_high && chosen.ci95_low <= r.ci95_high
                })
            })
            .map(|c| per_gpu(c))
            .collect();
        self
    }
}

/// The best-case demand of `s`; see the module documentation. `eps` is clamped to [0, 1) and
/// negative or non-finite weights count as 0.
pub fn best_case(s: &Surface, shape: &ServerShape, eps: f64, w: CostWeights) -> Demand {
    let eps = if eps.is_finite() {
        eps.clamp(0.0, 0.999)
    } else {
        0.0
    };
    let weight = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    let (wc, wm) = (weight(w.cpu), weight(w.mem));
    let best = s.max();
    // A relative slack of 1e-9 so a table's equal values compare equal after float arithmetic.
    let threshold = best * (1.0 - eps) * (1.0 - 1e-9);
    let mut choice: Option<(f64, usize, usize)> = None;
    for ci in 0..s.cpu.len() {
        for mi in 0..s.mem.len() {
            if s.on_grid(ci, mi) < threshold {
                continue;
            }
            let cost = wc * s.cpu[ci] / shape.share_cpus() + wm * s.mem[mi] / shape.share_mem_gb();
            let better = match choice {
                None => true,
                Some((c, bci, bmi)) => {
                    cost < c - 1e-12 || (cost <= c + 1e-12 && (ci, mi) < (bci, bmi))
                }
            };
            if better {
                choice = Some((cost, ci, mi));
            }
        }
    }
    let (_, ci, mi) = choice.expect("the best grid point reaches its own throughput");
    let at = s.on_grid(ci, mi);
    let proportional = s.at(shape.share_cpus(), shape.share_mem_gb(), Interp::Bilinear);
    Demand {
        cpus_per_gpu: s.cpu[ci],
        mem_gb_per_gpu: s.mem[mi],
        samples_per_s_per_gpu: at,
        best_samples_per_s_per_gpu: best,
        proportional_samples_per_s_per_gpu: proportional,
        speedup_over_proportional: if proportional > 0.0 {
            at / proportional
        } else {
            0.0
        },
        eps,
        shape: *shape,
        alike: Vec::new(),
    }
}

/// A parameter combination and its demand.
pub type ParamsDemand = (BTreeMap<String, String>, Demand);

/// The best-case demand of every parameter combination of `m` (one entry, with empty
/// parameters, for a matrix that sweeps none), in sorted order of the parameters.
pub fn demands(
    m: &Matrix,
    shape: &ServerShape,
    eps: f64,
    w: CostWeights,
) -> Result<Vec<ParamsDemand>, SurfaceError> {
    let combos: BTreeSet<&BTreeMap<String, String>> = m.cells.iter().map(|c| &c.params).collect();
    if combos.is_empty() {
        return Err(SurfaceError::NoCells(m.header.job.model.clone()));
    }
    combos
        .into_iter()
        .map(|params| {
            let s = Surface::from_matrix_params(m, params)?;
            let demand = best_case(&s, shape, eps, w).with_alike(m, params);
            Ok((params.clone(), demand))
        })
        .collect()
}

/// `show --demand`: one line per parameter combination.
pub fn render_demands(
    m: &Matrix,
    shape: &ServerShape,
    eps: f64,
    w: CostWeights,
) -> Result<String, SurfaceError> {
    let mut out = String::new();
    for (params, d) in demands(m, shape, eps, w)? {
        let label: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !label.is_empty() {
            out.push_str(&format!("[{}] ", label.join(", ")));
        }
        out.push_str(&format!("{}: {d}\n", m.header.job.model));
    }
    Ok(out)
}

impl fmt::Display for Demand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "best case: {} CPUs and {} GB per GPU give {} samples/s per GPU ({}% of the best, {}); \
             {:.2}x the proportional share of a {} server ({} CPUs, {} GB per GPU: {} samples/s)",
            trim(self.cpus_per_gpu),
            trim(self.mem_gb_per_gpu),
            trim(self.samples_per_s_per_gpu),
            trim(100.0 * self.samples_per_s_per_gpu / self.best_samples_per_s_per_gpu),
            trim(self.best_samples_per_s_per_gpu),
            self.speedup_over_proportional,
            self.shape,
            trim(self.shape.share_cpus()),
            trim(self.shape.share_mem_gb()),
            trim(self.proportional_samples_per_s_per_gpu),
        )?;
        if !self.alike.is_empty() {
            let alike: Vec<String> = (self.alike.iter())
                .map(|[c, m]| format!("{} CPUs x {} GB", trim(*c), trim(*m)))
                .collect();
            write!(
                f,
                "; its blocks cannot tell it apart from {}",
                alike.join(", ")
            )?;
        }
        Ok(())
    }
}

/// A number with at most 4 significant digits after the point, trailing zeros dropped.
fn trim(x: f64) -> String {
    let s = if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    };
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::fixtures::header;
    use crate::matrix::{Cell, CellSource, Throughput};
    use proptest::prelude::*;

    fn surface(rows: &[[f64; 3]]) -> Surface {
        // CPU levels 1, 2, 4; memory 10, 20, 40 GB; one GPU.
        let mut cells = Vec::new();
        for (ci, row) in rows.iter().enumerate() {
            for (mi, &r) in row.iter().enumerate() {
                cells.push(Cell {
                    throughput: Some(Throughput {
                        samples_per_s: r,
                        ci95_low: r,
                        ci95_high: r,
                        windows: 1,
                        measured_s: 1.0,
                        launches: Vec::new(),
                    }),
                    wall_s: 1.0,
                    ..Cell::at(
                        [1.0, 2.0, 4.0][ci],
                        [10e9, 20e9, 40e9][mi] as u64,
                        Default::default(),
                        CellSource::Measured,
                    )
                });
            }
        }
        let mut h = header("m");
        h.job.gpus = 1;
        Surface::from_matrix(&Matrix { header: h, cells }).unwrap()
    }

    const SHAPE: ServerShape = ServerShape {
        cpus: 16.0,
        gpus: 8,
        mem_gb: 160.0,
    };

    #[test]
    fn least_cost_point_reaching_the_best() {
        let s = surface(&[[10.0, 20.0, 20.0], [10.0, 30.0, 40.0], [10.0, 30.0, 40.0]]);
        let d = best_case(&s, &SHAPE, 0.0, CostWeights::default());
        assert_eq!((d.cpus_per_gpu, d.mem_gb_per_gpu), (2.0, 40.0));
        assert_eq!(d.samples_per_s_per_gpu, 40.0);
        // Share: 2 CPUs, 20 GB per GPU -> 30 samples/s.
        assert_eq!(d.proportional_samples_per_s_per_gpu, 30.0);
        assert!((d.speedup_over_proportional - 4.0 / 3.0).abs() < 1e-12);
        // With eps = 0.25, 30 is close enough: (2, 20) is cheaper.
        let d = best_case(&s, &SHAPE, 0.25, CostWeights::default());
        assert_eq!((d.cpus_per_gpu, d.mem_gb_per_gpu), (2.0, 20.0));
        assert!(d.to_string().contains("2 CPUs and 20 GB per GPU"), "{d}");
    }

    /// Absolute rates from launches far apart say 2 CPUs reach the best; the blocks say 2 CPUs
    /// give 90% of 4 CPUs' rate. The demand follows the blocks, in samples/s of the reference,
    /// and names 2 CPUs as what its interval cannot tell apart from 4.
    #[test]
    fn the_demand_follows_relative_rates_and_names_what_it_cannot_tell_apart() {
        let cell = |cpu: f64, rate: f64, rel: [f64; 3]| {
            crate::matrix::fixtures::measured(cpu, 10_000_000_000, rate, Some(rel))
        };
        let mut h = header("m");
        h.job.gpus = 1;
        let mut m = Matrix {
            header: h,
            cells: vec![
                cell(1.0, 50.0, [0.5, 0.45, 0.55]),
                cell(2.0, 100.0, [0.9, 0.85, 1.02]),
                cell(4.0, 100.0, [1.0, 1.0, 1.0]),
            ],
        };
        let d = &demands(&m, &SHAPE, DEFAULT_EPS, CostWeights::default()).unwrap()[0].1;
        assert_eq!(d.cpus_per_gpu, 4.0);
        assert!((d.best_samples_per_s_per_gpu - 100.0).abs() < 1e-9);
        assert_eq!(d.alike, vec![[2.0, 10.0]]);
        assert!(
            d.to_string()
                .contains("cannot tell it apart from 2 CPUs x 10 GB"),
            "{d}"
        );
        // One rate without a relative one: the absolute rates decide, as before.
        m.cells[0].relative = None;
        let d = &demands(&m, &SHAPE, DEFAULT_EPS, CostWeights::default()).unwrap()[0].1;
        assert_eq!(d.cpus_per_gpu, 2.0);
    }

    #[test]
    fn weights_trade_cpu_for_memory() {
        // Two ways to the best: (4 CPUs, 10 GB) or (1 CPU, 40 GB).
        let s = surface(&[[1.0, 1.0, 9.0], [1.0, 1.0, 9.0], [9.0, 9.0, 9.0]]);
        let cheap_mem = CostWeights { cpu: 1.0, mem: 0.1 };
        let d = best_case(&s, &SHAPE, 0.0, cheap_mem);
        assert_eq!((d.cpus_per_gpu, d.mem_gb_per_gpu), (1.0, 40.0));
        let cheap_cpu = CostWeights { cpu: 0.1, mem: 1.0 };
        let d = best_case(&s, &SHAPE, 0.0, cheap_cpu);
        assert_eq!((d.cpus_per_gpu, d.mem_gb_per_gpu), (4.0, 10.0));
    }

    proptest! {
        #[test]
        fn demand_reaches_the_threshold_and_nothing_cheaper_does(
            rates in proptest::collection::vec(1.0f64..1e3, 9),
            eps in 0.0f64..0.5,
            wc in 0.0f64..3.0,
            wm in 0.0f64..3.0,
        ) {
            let rows: Vec<[f64; 3]> = rates.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
            let s = surface(&rows);
            let w = CostWeights { cpu: wc, mem: wm };
            let d = best_case(&s, &SHAPE, eps, w);
            let threshold = s.max() * (1.0 - eps) * (1.0 - 1e-9);
            prop_assert!(d.samples_per_s_per_gpu >= threshold);
            prop_assert!(d.samples_per_s_per_gpu <= d.best_samples_per_s_per_gpu);
            prop_assert!(d.speedup_over_proportional.is_finite());
            let cost = |c: f64, m: f64| wc * c / SHAPE.share_cpus() + wm * m / SHAPE.share_mem_gb();
            let chosen = cost(d.cpus_per_gpu, d.mem_gb_per_gpu);
            for (ci, &c) in s.cpu.iter().enumerate() {
                for (mi, &m) in s.mem.iter().enumerate() {
                    if s.on_grid(ci, mi) >= threshold {
                        prop_assert!(cost(c, m) >= chosen - 1e-9);
                    }
                }
            }
        }
    }
}
