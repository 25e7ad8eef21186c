//! `--format slurm`: per model the exported cell (`--cell`, the best-case demand by default) as
//! Slurm per-GPU requests, whole cores (`--cpus-per-gpu`, rounded up) and MB (`--mem-per-gpu`,
//! Slurm's MB = 2^20 bytes, rounded up): `profiler_demands.csv` (`model,cpus_per_gpu,
//! mem_mb_per_gpu`) and `job_submit.lua`, a job_submit/lua plugin that applies the table to GPU
//! jobs whose comment names a model (`cpus_per_tres`, `mem_per_tres`, in the TRES syntax of the
//! job's own GPU request: `gres:gpu:N` up to Slurm 22.05, `gres/gpu:N` later). CPU-only matrices
//! (0 GPUs) have no per-GPU request and are left out of the table, with a note.

use super::{
    Artifact, ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered, ceil_whole,
    fmt_sig6,
};
use std::fmt::Write as _;

/// Where `job_submit.lua` reads the table unless `--slurm-table` says otherwise.
pub const DEFAULT_TABLE: &str = "/etc/slurm/profiler_demands.csv";
/// File name of the table in the output directory.
pub const TABLE_FILE: &str = "profiler_demands.csv";

const LUA_TEMPLATE: &str = include_str!("job_submit.lua");

pub struct Slurm;

impl Exporter for Slurm {
    fn layout(&self) -> Layout {
        Layout::Directory
    }

    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
        super::unique_by(matrices, |p| p.model().to_owned())?;
        let mut out = Rendered::default();
        let mut table = String::from("model,cpus_per_gpu,mem_mb_per_gpu\n");
        let mut rows = 0;
        for p in matrices {
            let model = p.model();
            if model.trim() != model
                || model.is_empty()
                || model.contains(',')
                || model.chars().any(char::is_control)
            {
                return Err(ExportError::unsupported(
                    &p.path,
                    format!(
                        "model name {model:?} cannot be a job comment matched by the table \
                         (no commas, control characters or surrounding spaces)"
                    ),
                ));
            }
            if p.matrix.header.job.gpus == 0 {
                out.notes.push(format!(
                    "{model}: CPU-only matrix (0 GPUs): no per-GPU request, left out of {TABLE_FILE}"
                ));
                continue;
            }
            let cell = opts.cell.pick(p, &opts.server);
            let cpus = ceil_whole(p.finite("CPUs per GPU", cell.cpus_per_gpu)?).max(1);
            let mb = ceil_whole(
                p.finite("GB per GPU", cell.mem_gb_per_gpu)? * 1e9 / (1u64 << 20) as f64,
            )
            .max(1);
            let _ = writeln!(table, "{model},{cpus},{mb}");
            out.notes.push(format!(
                "{model}: --cpus-per-gpu={cpus} --mem-per-gpu={mb} (--cell {}: {} CPUs, {} GB per GPU)",
                opts.cell,
                fmt_sig6(cell.cpus_per_gpu),
                fmt_sig6(cell.mem_gb_per_gpu)
            ));
            rows += 1;
        }
        if rows == 0 {
            return Err(ExportError::Options(
                "--format slurm: no matrix of a GPU job among the inputs; Slurm's per-GPU requests \
                 need one"
                    .into(),
            ));
        }
        out.artifacts.push(Artifact::text(TABLE_FILE, table));
        out.artifacts.push(Artifact::text(
            "job_submit.lua",
            LUA_TEMPLATE.replace("@DEMAND_TABLE@", &opts.slurm_table),
        ));
        Ok(out)
    }
}
