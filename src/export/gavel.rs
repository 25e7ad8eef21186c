//! `--format gavel`: a fragment of Gavel's `simulation_throughputs.json`
//! (stanford-futuredata/gavel): `{worker type: {"('<job type>', <scale factor>)": {"null":
//! steps/s}}}`, one entry per matrix. Gavel has no CPU or memory axis, so each matrix
//! contributes the throughput of one cell (`--cell`); the job type is
//! `<model> (batch size <B>)`, the scale factor the job's GPUs, and steps/s the per-GPU
//! samples/s over the per-GPU batch size (a data-parallel step processes one batch per GPU).
//! Each matrix is filed under its machine kind as Gavel's worker type (`--gavel-worker` puts
//! them all under one; a matrix that records no kind goes under `v100`), so matrices of one
//! model measured on several kinds of server give Gavel its throughput per worker type.

use super::{Artifact, ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered, fmt_sig6};

pub struct Gavel;

/// Gavel's job type for a matrix.
pub fn job_type(model: &str, batch: u64) -> String {
    format!("{model} (batch size {batch})")
}

/// Gavel's worker type for a matrix: `--gavel-worker` where given, else its machine kind
/// (`v100` where it records none).
fn worker_type(p: &Prepared, opts: &ExportOptions) -> String {
    match (&opts.gavel_worker, &p.matrix.header.machine) {
        (Some(w), _) => w.clone(),
        (None, Some(m)) if m.kind.is_some() => m.kind_key().to_string(),
        (None, _) => DEFAULT_WORKER.to_string(),
    }
}

/// The worker type of a matrix with no machine kind.
pub const DEFAULT_WORKER: &str = "v100";

impl Exporter for Gavel {
    fn layout(&self) -> Layout {
        Layout::File { binary: false }
    }

    fn render(&self, matrices: &[Prepared], opts: &ExportOptions) -> Result<Rendered, ExportError> {
        let mut workers: Vec<(String, Vec<String>)> = Vec::new();
        let mut keys: Vec<(String, &Prepared)> = Vec::new();
        let mut notes = Vec::new();
        for p in matrices {
            let batch = p.require_batch("Gavel")?;
            let model = p.model();
            if model.contains(['\'', '"', '\\']) || model.chars().any(char::is_control) {
                return Err(ExportError::unsupported(
                    &p.path,
                    format!("model name {model:?} cannot be written in Gavel's job-type key"),
                ));
            }
            let key = format!("('{}', {})", job_type(model, batch), p.gpus());
            let worker = worker_type(p, opts);
            let filed = format!("{worker}: {key}");
            if let Some((_, first)) = keys.iter().find(|(k, _)| *k == filed) {
                return Err(ExportError::Duplicate {
                    name: key,
                    first: first.path.clone(),
                    second: p.path.clone(),
                });
            }
            let cell = opts.cell.pick(p, &opts.server);
            let steps = p.finite("steps/s", cell.samples_per_s_per_gpu / batch as f64)?;
            if steps <= 0.0 {
                return Err(ExportError::unsupported(
                    &p.path,
                    format!(
                        "no throughput at --cell {} ({} CPUs, {} GB per GPU): Gavel would never \
                         finish this job",
                        opts.cell,
                        fmt_sig6(cell.cpus_per_gpu),
                        fmt_sig6(cell.mem_gb_per_gpu)
                    ),
                ));
            }
            notes.push(format!(
                "{worker} {key}: {} steps/s at {} CPUs, {} GB per GPU (--cell {})",
                fmt_sig6(steps),
                fmt_sig6(cell.cpus_per_gpu),
                fmt_sig6(cell.mem_gb_per_gpu),
                opts.cell
            ));
            let entry = format!("    \"{key}\": {{\"null\": {steps}}}");
            match workers.iter_mut().find(|(w, _)| *w == worker) {
                Some((_, entries)) => entries.push(entry),
                None => workers.push((worker, vec![entry])),
            }
            keys.push((filed, p));
        }
        let text = format!(
            "{{\n{}\n}}\n",
            (workers.iter())
                .map(|(w, entries)| format!("  \"{w}\": {{\n{}\n  }}", entries.join(",\n")))
                .collect::<Vec<_>>()
                .join(",\n")
        );
        Ok(Rendered {
            artifacts: vec![Artifact::text("simulation_throughputs.json", text)],
            notes,
        })
    }
}
