//! The long-form table behind the `csv` and `parquet` formats: one row per cell of every input
//! matrix, every field of the header and the cell as its own column, and the matrix's best-case
//! demand repeated on each of its rows, so tables of many matrices concatenate.
//!
//! Absent values (no machine for an imported matrix, no throughput for a failed cell, no GPU
//! telemetry, a parameter another matrix has) are nulls. A float that is not finite is written
//! as null too, never as NaN.

use super::{ExportError, ExportOptions, Prepared};
use crate::matrix::Cell;
use crate::matrix::cell_model::{absolute_rates, read_at_of};
use polars::prelude::{Column, DataFrame, NamedFrom, Series};
use std::collections::BTreeSet;
use std::path::Path;

fn col<T, V>(name: &str, values: V) -> Column
where
    Series: NamedFrom<V, T>,
    T: ?Sized,
{
    Series::new(name.into(), values).into()
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// Columns, in order (units in the name: `_bytes`, `_s`, `_pct`, `_w`, `_mhz`, `_gb`):
///
/// * the matrix: `matrix_file`, `job_name`, `job_model`, `job_gpus`, `job_batch_size_per_gpu`,
///   `job_dataset_bytes`, `job_dataset_samples`, `machine_hostname`, `machine_cpus`,
///   `machine_memory_bytes`, `machine_kernel`, `machine_cgroup`, `machine_gpus` (names joined
///   by `; `), `machine_kind` (the machine-kind key, `unknown` where the header has none),
///   `machine_cpu_model`, `machine_microarchitecture`, `machine_cpu_extensions` (joined by
///   spaces), `machine_sockets`, `machine_cores`, `machine_threads`,
///   `machine_memory_read_bytes_per_s`, `machine_storage_device`, `machine_storage_model`,
///   `machine_storage_filesystem`, `machine_gpu_memory_bytes`, `machine_gpu_driver` (of the
///   first GPU), `matrix_validation` (the header's `profiler validate` result in one line);
/// * the cell: `cpu` (cores), `memory_bytes`, `param_<name>` for every parameter of any input,
///   `source`, `samples_per_s`, `ci95_low`, `ci95_high`, `windows`, `measured_s`, `relative`,
///   `relative_ci95_low`, `relative_ci95_high`, `relative_blocks` (the rate over the top cell's
///   in the same block, the interval another sweep's lands in, and the blocks behind it),
///   `relative_raw`, `host_model`, `host_slope`, `host_explained` (the relative rate before
///   the host's speed was taken out, how the cell's CPU level follows the probe, the slope
///   its ratios were read with, the share of their spread the probe explained),
///   `iteration_p50_s`, `iteration_p95_s`, `cpu_cores_used`, `throttled_s_per_s`,
///   `rss_peak_bytes`, `page_cache_bytes`, `storage_read_bytes_per_s`, `gpu_utilization_pct`,
///   `gpu_sm_clock_mhz`, `gpu_memory_used_bytes`, `gpu_power_w`, `gpu_sm_activity_pct`,
///   `launches` (launches the rate comes from), `other_cores`, `run_wait_cores`,
///   `elsewhere_cores`, `disturbed`, `disturbed_by` (the cell's interference), `note`, `wall_s`;
/// * `quiet_host_samples_per_s`: the cell's rate read at the quiet host's speed, where its CPU
///   level follows the probe;
/// * the matrix's best-case demand (per GPU, first parameter combination): `demand_server`,
///   `demand_eps`, `demand_params`, `demand_cpus_per_gpu`, `demand_mem_gb_per_gpu`,
///   `demand_samples_per_s_per_gpu`, `demand_best_samples_per_s_per_gpu`,
///   `demand_proportional_samples_per_s_per_gpu`, `demand_speedup_over_proportional`,
///   `demand_alike` (the allocations, `CPUsxGB` per GPU joined by `;`, whose relative interval
///   overlaps the demand's: the blocks cannot tell them apart from it).
pub fn cells_frame(matrices: &[Prepared], opts: &ExportOptions) -> Result<DataFrame, ExportError> {
    let rows = Rows(
        matrices
            .iter()
            .flat_map(|p| p.matrix.cells.iter().map(move |c| (p, c)))
            .collect(),
    );
    let quiet: Vec<Option<f64>> = (matrices.iter())
        .flat_map(|p| absolute_rates(&p.matrix.cells, read_at_of(&p.matrix.header)))
        .collect();
    let mut columns = rows.matrix_columns();
    columns.extend(rows.param_columns());
    columns.extend(rows.cell_columns());
    columns.push(col("quiet_host_samples_per_s", quiet));
    columns.extend(rows.demand_columns(opts));
    DataFrame::new(rows.0.len(), columns).map_err(|e| ExportError::Table {
        path: matrices
            .first()
            .map_or_else(|| Path::new("<no matrix>").to_owned(), |p| p.path.clone()),
        message: format!("building the cell table: {e}"),
    })
}

fn machine(p: &Prepared) -> Option<&crate::matrix::MachineInfo> {
    p.matrix.header.machine.as_ref()
}

fn processor(p: &Prepared) -> Option<&crate::matrix::Processor> {
    machine(p).and_then(|m| m.processor.as_ref())
}

fn storage(p: &Prepared) -> Option<&crate::matrix::Storage> {
    machine(p).and_then(|m| m.storage.as_ref())
}

/// The cell table's rows: every cell with the matrix it is from.
struct Rows<'a>(Vec<(&'a Prepared, &'a Cell)>);

impl Rows<'_> {
    fn s(&self, get: &dyn Fn(&Prepared, &Cell) -> Option<String>) -> Vec<Option<String>> {
        self.0.iter().map(|(p, c)| get(p, c)).collect()
    }

    fn f(&self, get: &dyn Fn(&Prepared, &Cell) -> Option<f64>) -> Vec<Option<f64>> {
        (self.0.iter())
            .map(|(p, c)| get(p, c).and_then(finite))
            .collect()
    }

    fn u(&self, get: &dyn Fn(&Prepared, &Cell) -> Option<u64>) -> Vec<Option<u64>> {
        self.0.iter().map(|(p, c)| get(p, c)).collect()
    }

    fn w(&self, get: &dyn Fn(&Prepared, &Cell) -> Option<u32>) -> Vec<Option<u32>> {
        self.0.iter().map(|(p, c)| get(p, c)).collect()
    }

    fn b(&self, get: &dyn Fn(&Prepared, &Cell) -> Option<bool>) -> Vec<Option<bool>> {
        self.0.iter().map(|(p, c)| get(p, c)).collect()
    }

    /// The matrix's job and machine, and the cell's place on its axes.
    fn matrix_columns(&self) -> Vec<Column> {
        let mut columns = vec![
            col(
                "matrix_file",
                self.s(&|p, _| Some(p.path.display().to_string())),
            ),
            col(
                "job_name",
                self.s(&|p, _| Some(p.matrix.header.job.name.clone())),
            ),
            col(
                "job_model",
                self.s(&|p, _| Some(p.matrix.header.job.model.clone())),
            ),
            col("job_gpus", self.w(&|p, _| Some(p.matrix.header.job.gpus))),
            col(
                "job_batch_size_per_gpu",
                self.u(&|p, _| p.matrix.header.job.batch_size_per_gpu),
            ),
            col(
                "job_dataset_bytes",
                self.u(&|p, _| p.matrix.header.job.dataset_bytes),
            ),
            col(
                "job_dataset_samples",
                self.u(&|p, _| p.matrix.header.job.dataset_samples),
            ),
        ];
        columns.extend(self.machine_columns());
        columns.extend([
            col("matrix_validation", self.s(&|p, _| p.validation_summary())),
            col("cpu", self.f(&|_, c| Some(c.cpu))),
            col("memory_bytes", self.u(&|_, c| Some(c.memory_bytes))),
        ]);
        columns
    }

    /// The machine the matrix was measured on, and its kind.
    fn machine_columns(&self) -> Vec<Column> {
        vec![
            col(
                "machine_hostname",
                self.s(&|p, _| p.matrix.header.machine.as_ref().map(|m| m.hostname.clone())),
            ),
            col(
                "machine_cpus",
                self.w(&|p, _| p.matrix.header.machine.as_ref().map(|m| m.cpus)),
            ),
            col(
                "machine_memory_bytes",
                self.u(&|p, _| p.matrix.header.machine.as_ref().map(|m| m.memory_bytes)),
            ),
            col(
                "machine_kernel",
                self.s(&|p, _| p.matrix.header.machine.as_ref().map(|m| m.kernel.clone())),
            ),
            col(
                "machine_cgroup",
                self.s(&|p, _| p.matrix.header.machine.as_ref().map(|m| m.cgroup.clone())),
            ),
            col(
                "machine_gpus",
                self.s(&|p, _| p.matrix.header.machine.as_ref().map(|m| m.gpus.join("; "))),
            ),
            col(
                "machine_kind",
                self.s(&|p, _| {
                    Some(crate::matrix::machine::kind_of(p.matrix.header.machine.as_ref()).into())
                }),
            ),
            col(
                "machine_cpu_model",
                self.s(&|p, _| processor(p).map(|c| c.model_name.clone())),
            ),
            col(
                "machine_microarchitecture",
                self.s(&|p, _| processor(p).map(|c| c.microarchitecture.clone())),
            ),
            col(
                "machine_cpu_extensions",
                self.s(&|p, _| processor(p).map(|c| c.extensions.join(" "))),
            ),
            col(
                "machine_sockets",
                self.w(&|p, _| processor(p).map(|c| c.sockets)),
            ),
            col(
                "machine_cores",
                self.w(&|p, _| processor(p).map(|c| c.cores)),
            ),
            col(
                "machine_threads",
                self.w(&|p, _| processor(p).map(|c| c.threads)),
            ),
            col(
                "machine_memory_read_bytes_per_s",
                self.f(&|p, _| machine(p).and_then(|m| m.memory_read_bytes_per_s)),
            ),
            col(
                "machine_storage_device",
                self.s(&|p, _| storage(p).map(|s| s.device.clone())),
            ),
            col(
                "machine_storage_model",
                self.s(&|p, _| storage(p).and_then(|s| s.model.clone())),
            ),
            col(
                "machine_storage_filesystem",
                self.s(&|p, _| storage(p).map(|s| s.filesystem.clone())),
            ),
            col(
                "machine_gpu_memory_bytes",
                self.u(&|p, _| {
                    machine(p)
                        .and_then(|m| m.gpu_devices.first())
                        .map(|g| g.memory_bytes)
                }),
            ),
            col(
                "machine_gpu_driver",
                self.s(&|p, _| {
                    machine(p)
                        .and_then(|m| m.gpu_devices.first())
                        .map(|g| g.driver.clone())
                }),
            ),
        ]
    }

    /// One column per parameter any matrix has (`param_<name>`).
    fn param_columns(&self) -> Vec<Column> {
        let names: BTreeSet<&str> = (self.0.iter())
            .flat_map(|(p, c)| {
                c.params
                    .keys()
                    .chain(p.matrix.header.axes.params.keys())
                    .map(String::as_str)
            })
            .collect();
        (names.iter())
            .map(|name| {
                col(
                    &format!("param_{name}"),
                    self.s(&|_, c| c.params.get(*name).cloned()),
                )
            })
            .collect()
    }

    /// What the cell measured: rate and its intervals, iteration times, telemetry, GPU,
    /// interference, note.
    fn cell_columns(&self) -> Vec<Column> {
        let tp = |c: &Cell| c.throughput.clone();
        let tel = |c: &Cell| c.telemetry.clone();
        let gpu = |c: &Cell| c.gpu.clone();
        let itf = |c: &Cell| c.interference.clone();
        let mut columns = vec![
            col("source", self.s(&|_, c| Some(c.source.as_str().to_owned()))),
            col(
                "samples_per_s",
                self.f(&|_, c| tp(c).map(|t| t.samples_per_s)),
            ),
            col("ci95_low", self.f(&|_, c| tp(c).map(|t| t.ci95_low))),
            col("ci95_high", self.f(&|_, c| tp(c).map(|t| t.ci95_high))),
            col("windows", self.w(&|_, c| tp(c).map(|t| t.windows))),
            col("measured_s", self.f(&|_, c| tp(c).map(|t| t.measured_s))),
        ];
        columns.extend(self.relative_columns());
        columns.extend([
            col(
                "iteration_p50_s",
                self.f(&|_, c| c.iteration_time_s.as_ref().map(|i| i.p50)),
            ),
            col(
                "iteration_p95_s",
                self.f(&|_, c| c.iteration_time_s.as_ref().map(|i| i.p95)),
            ),
            col(
                "cpu_cores_used",
                self.f(&|_, c| tel(c).map(|t| t.cpu_cores_used)),
            ),
            col(
                "throttled_s_per_s",
                self.f(&|_, c| tel(c).map(|t| t.throttled_s_per_s)),
            ),
            col(
                "rss_peak_bytes",
                self.u(&|_, c| tel(c).map(|t| t.rss_peak_bytes)),
            ),
            col(
                "page_cache_bytes",
                self.u(&|_, c| tel(c).map(|t| t.page_cache_bytes)),
            ),
            col(
                "storage_read_bytes_per_s",
                self.f(&|_, c| tel(c).map(|t| t.storage_read_bytes_per_s)),
            ),
            col(
                "gpu_utilization_pct",
                self.f(&|_, c| gpu(c).map(|g| g.utilization_pct)),
            ),
            col(
                "gpu_sm_clock_mhz",
                self.f(&|_, c| gpu(c).map(|g| g.sm_clock_mhz)),
            ),
            col(
                "gpu_memory_used_bytes",
                self.u(&|_, c| gpu(c).map(|g| g.memory_used_bytes)),
            ),
            col("gpu_power_w", self.f(&|_, c| gpu(c).map(|g| g.power_w))),
            col(
                "gpu_sm_activity_pct",
                self.f(&|_, c| gpu(c).and_then(|g| g.sm_activity_pct)),
            ),
            col(
                "launches",
                self.w(&|_, c| tp(c).map(|t| t.launches.len().max(1) as u32)),
            ),
            col("other_cores", self.f(&|_, c| itf(c).map(|i| i.other_cores))),
            col(
                "run_wait_cores",
                self.f(&|_, c| itf(c).and_then(|i| i.run_wait_cores)),
            ),
            col(
                "elsewhere_cores",
                self.f(&|_, c| itf(c).and_then(|i| i.elsewhere_cores)),
            ),
            col("disturbed", self.b(&|_, c| itf(c).map(|i| i.disturbed))),
            col(
                "disturbed_by",
                self.s(&|_, c| itf(c).and_then(|i| i.disturbed_by)),
            ),
            col("note", self.s(&|_, c| c.note.clone())),
            col("wall_s", self.f(&|_, c| Some(c.wall_s))),
        ]);
        columns
    }

    /// The rate relative to the top cell of its block, its interval and blocks, and what the
    /// probe of the host's speed did to it.
    fn relative_columns(&self) -> Vec<Column> {
        let rel = |c: &Cell| c.relative.clone();
        vec![
            col("relative", self.f(&|_, c| rel(c).map(|r| r.rate))),
            col(
                "relative_ci95_low",
                self.f(&|_, c| rel(c).map(|r| r.ci95_low)),
            ),
            col(
                "relative_ci95_high",
                self.f(&|_, c| rel(c).map(|r| r.ci95_high)),
            ),
            col("relative_blocks", self.w(&|_, c| rel(c).map(|r| r.blocks))),
            col(
                "relative_raw",
                self.f(&|_, c| rel(c).and_then(|r| r.raw_rate)),
            ),
            col(
                "host_model",
                self.s(&|_, c| rel(c).and_then(|r| r.host_model).map(|m| m.as_str().into())),
            ),
            col(
                "host_slope",
                self.f(&|_, c| rel(c).and_then(|r| r.host_slope)),
            ),
            col(
                "host_explained",
                self.f(&|_, c| rel(c).and_then(|r| r.host_explained)),
            ),
        ]
    }

    /// The matrix's best-case demand.
    fn demand_columns(&self, opts: &ExportOptions) -> Vec<Column> {
        vec![
            col(
                "demand_server",
                self.s(&|_, _| Some(opts.server.to_string())),
            ),
            col("demand_eps", self.f(&|p, _| Some(p.demand.eps))),
            col(
                "demand_params",
                self.s(&|p, _| {
                    (!p.surface.params.is_empty()).then(|| {
                        p.surface
                            .params
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(";")
                    })
                }),
            ),
            col(
                "demand_cpus_per_gpu",
                self.f(&|p, _| Some(p.demand.cpus_per_gpu)),
            ),
            col(
                "demand_mem_gb_per_gpu",
                self.f(&|p, _| Some(p.demand.mem_gb_per_gpu)),
            ),
            col(
                "demand_samples_per_s_per_gpu",
                self.f(&|p, _| Some(p.demand.samples_per_s_per_gpu)),
            ),
            col(
                "demand_best_samples_per_s_per_gpu",
                self.f(&|p, _| Some(p.demand.best_samples_per_s_per_gpu)),
            ),
            col(
                "demand_proportional_samples_per_s_per_gpu",
                self.f(&|p, _| Some(p.demand.proportional_samples_per_s_per_gpu)),
            ),
            col(
                "demand_speedup_over_proportional",
                self.f(&|p, _| {
                    (p.demand.proportional_samples_per_s_per_gpu > 0.0)
                        .then_some(p.demand.speedup_over_proportional)
                }),
            ),
            col(
                "demand_alike",
                self.s(&|p, _| {
                    let alike = p.demand.alike.iter().map(|[c, m]| format!("{c}x{m}"));
                    (!p.demand.alike.is_empty()).then(|| alike.collect::<Vec<_>>().join(";"))
                }),
            ),
        ]
    }
}
