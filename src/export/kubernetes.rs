//! `--format kubernetes`: per model a container `resources` block with requests equal to limits
//! and a whole number of CPUs, so the pod gets Guaranteed QoS (and exclusive cores under the
//! kubelet's static CPU manager). Values are for the whole job: the exported cell (`--cell`,
//! the best-case demand by default) per GPU times the job's GPUs, CPUs rounded up to whole
//! cores, memory rounded up to Mi (2^20 bytes), `nvidia.com/gpu` the job's GPUs (left out for a
//! CPU-only matrix). One YAML mapping, model name -> `resources`.

use super::{
    Artifact, ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered, ceil_whole,
    fmt_sig6,
};
use std::fmt::Write as _;

pub struct Kubernetes;

impl Exporter for Kubernetes {
    fn layout(&self) -> Layout {
        Layout::File { binary: false }
    }

    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
        super::unique_by(matrices, |p| p.model().to_owned())?;
        let mut text = String::from(
            "# Container resources per model, written by `profiler export --format kubernetes`.\n\
             # requests = limits with whole CPUs: Guaranteed QoS (exclusive cores with the\n\
             # kubelet's static CPU manager). Paste a model's `resources` into its container.\n",
        );
        for p in matrices {
            let cell = opts.cell.pick(p, &opts.server);
            let gpus = p.matrix.header.job.gpus;
            let per = p.gpus() as f64;
            let cpus = ceil_whole(p.finite("CPUs", cell.cpus_per_gpu * per)?).max(1);
            let mi = ceil_whole(p.finite(
                "memory",
                cell.mem_gb_per_gpu * per * 1e9 / (1u64 << 20) as f64,
            )?)
            .max(1);
            let key = serde_json::to_string(p.model())
                .map_err(|e| ExportError::unsupported(&p.path, format!("model name: {e}")))?;
            let jobs_gpus = match gpus {
                0 => "CPU-only job".to_owned(),
                1 => "x 1 GPU".to_owned(),
                g => format!("x {g} GPUs"),
            };
            let comment = format!(
                "# {}: --cell {} = {} CPUs, {} GB per GPU, {jobs_gpus} ({})",
                p.model(),
                opts.cell,
                fmt_sig6(cell.cpus_per_gpu),
                fmt_sig6(cell.mem_gb_per_gpu),
                p.path.display()
            );
            let _ = writeln!(text, "{}", comment.replace(['\n', '\r'], " "));
            let _ = writeln!(text, "{key}:\n  resources:");
            for side in ["requests", "limits"] {
                let _ = writeln!(
                    text,
                    "    {side}:\n      cpu: \"{cpus}\"\n      memory: {mi}Mi"
                );
                if gpus > 0 {
                    let _ = writeln!(text, "      nvidia.com/gpu: {gpus}");
                }
            }
        }
        Ok(Rendered {
            artifacts: vec![Artifact::text("resources.yaml", text)],
            notes: Vec::new(),
        })
    }
}
