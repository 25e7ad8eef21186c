//! `--format synergy-profile`: the `profile.json` Synergy's offline profiler writes
//! (`src/profiler/offline_profiler.py`), one per matrix as `<job>/profile.json`: a JSON list
//! `[iter_times, perf, storage]`, keyed by the job's CPU count (a string):
//!
//! * `iter_times`: `{cpus: seconds per iteration}` with all memory (the matrix's largest level);
//! * `perf`: `{cpus: {pct: epoch seconds}}`, `pct` = 0, 10, ..., 100 % of the dataset cached;
//! * `storage`: `{cpus: {pct: MB/s read from storage}}` (MB = 2^20 bytes, as Synergy's profiler
//!   counts them), 0 at 100 %.
//!
//! Synergy profiles the CPU axis with everything cached and estimates the other percentages from
//! bandwidths; here every entry comes from the matrix. The largest memory level is taken as the
//! one that caches the whole dataset, and `pct` % cached as that level minus `(100 - pct)` % of
//! the dataset, looked up on the surface with [`Interp::Bilinear`] (so below the matrix's
//! smallest level the rate falls linearly to 0). Epoch time = dataset samples / job samples/s;
//! the storage rate is the uncached bytes of an epoch over the epoch time. Entries whose
//! throughput is 0 (a failed level, or no memory left for the job) are left out, with a note.

use super::{Artifact, ExportError, ExportOptions, Exporter, Layout, Prepared, Rendered};
use crate::matrix::Interp;
use std::fmt::Write as _;

const MB: f64 = (1u64 << 20) as f64;

pub struct SynergyProfile;

impl Exporter for SynergyProfile {
    fn layout(&self) -> Layout {
        Layout::Directory
    }

    fn render(
        &self,
        matrices: &[Prepared],
        _opts: &ExportOptions,
    ) -> Result<Rendered, ExportError> {
        super::unique_by(matrices, |p| dir_name(&p.matrix.header.job.name))?;
        let mut out = Rendered::default();
        for p in matrices {
            let (text, left_out) = profile_json(p)?;
            let name = format!("{}/profile.json", dir_name(&p.matrix.header.job.name));
            if left_out > 0 {
                out.notes.push(format!(
                    "{name}: {left_out} entries left out (no throughput there)"
                ));
            }
            out.artifacts.push(Artifact::text(name, text));
        }
        Ok(out)
    }
}

/// The job name as one safe path component.
fn dir_name(job: &str) -> String {
    let s: String = job
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("job{s}")
    } else {
        s
    }
}

/// A CPU count as Synergy's keys write it: `24`, `0.5`.
fn cpu_key(cores: f64) -> String {
    if cores.fract() == 0.0 && cores.abs() < 1e15 {
        format!("{}", cores as i64)
    } else {
        format!("{cores}")
    }
}

/// The JSON text and the number of entries left out.
fn profile_json(p: &Prepared) -> Result<(String, usize), ExportError> {
    let h = &p.matrix.header.job;
    let need = |what: &str| {
        ExportError::unsupported(
            &p.path,
            format!(
                "no {what} in the header: Synergy's profile.json keys memory by the percentage \
                 of the dataset cached and reports epoch times"
            ),
        )
    };
    let dataset_bytes = h
        .dataset_bytes
        .filter(|&b| b > 0)
        .ok_or_else(|| need("job.dataset_bytes"))?;
    let samples = h
        .dataset_samples
        .filter(|&n| n > 0)
        .ok_or_else(|| need("job.dataset_samples"))?;
    let batch = p.require_batch("Synergy's profile.json")?;
    let s = &p.surface;
    let g = p.gpus() as f64;
    let top = s.mem[s.mem.len() - 1];
    let d_gb_per_gpu = dataset_bytes as f64 / 1e9 / g;

    let mut left_out = 0;
    let mut iter_times = Vec::new();
    let mut perf = Vec::new();
    let mut storage = Vec::new();
    // Synergy's profiler lists the largest CPU count first.
    for &c in s.cpu.iter().rev() {
        let key = cpu_key(c * g);
        let full = s.at(c, top, Interp::Bilinear);
        if full > 0.0 {
            let t = p.finite("iteration time", batch as f64 / full)?;
            iter_times.push(format!("\"{key}\": {t}"));
        } else {
            left_out += 1;
        }
        let mut perf_row = Vec::new();
        let mut storage_row = Vec::new();
        for pct in (0..=100).step_by(10) {
            let uncached = (100 - pct) as f64 / 100.0;
            let mem = top - uncached * d_gb_per_gpu;
            let per_gpu = if mem > 0.0 {
                s.at(c, mem, Interp::Bilinear)
            } else {
                0.0
            };
            if per_gpu <= 0.0 {
                left_out += 1;
                continue;
            }
            let epoch_s = p.finite("epoch time", samples as f64 / (per_gpu * g))?;
            let mb_per_s = p.finite(
                "storage rate",
                uncached * dataset_bytes as f64 / MB / epoch_s,
            )?;
            perf_row.push(format!("\"{pct}\": {epoch_s}"));
            storage_row.push(format!("\"{pct}\": {mb_per_s}"));
        }
        if !perf_row.is_empty() {
            perf.push(format!("\"{key}\": {{{}}}", perf_row.join(", ")));
            storage.push(format!("\"{key}\": {{{}}}", storage_row.join(", ")));
        }
    }
    let mut text = String::new();
    let _ = writeln!(
        text,
        "[{{{}}},\n {{{}}},\n {{{}}}]",
        iter_times.join(", "),
        perf.join(",\n  "),
        storage.join(",\n  ")
    );
    Ok((text, left_out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_directory_names() {
        assert_eq!(cpu_key(24.0), "24");
        assert_eq!(cpu_key(0.5), "0.5");
        assert_eq!(dir_name("input-pipeline"), "input-pipeline");
        assert_eq!(dir_name("a/b c"), "a_b_c");
        assert_eq!(dir_name(".."), "job..");
    }
}
