//! `profiler deploy --profile`: the matrices a deploy reads, measured on this machine first.
//! Every job spec of the deploy's jobs directory is swept into the profiles directory, unless a
//! matrix of it measured on this kind of machine is already there.

use super::DeployProgress;
use super::catalog::Catalog;
use super::error::DeployError;
use crate::harness::sweep::fleet::PrefixedLines;
use crate::harness::sweep::{SweepOptions, run_sweep};
use crate::matrix::{MachineInfo, load_matrix};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Where a spec's matrix goes in `dir`.
pub fn matrix_path(dir: &Path, spec_name: &str) -> PathBuf {
    dir.join(format!("{spec_name}.matrix.jsonl"))
}

/// Why the matrix at `path` is not one to deploy with here, or `None` where it is.
fn stale(path: &Path, here: &MachineInfo) -> Option<String> {
    match load_matrix(path) {
        Err(_) if !path.exists() => Some("no matrix yet".into()),
        Err(e) => Some(format!("unreadable ({e})")),
        Ok(m) => {
            let kind = crate::matrix::machine::kind_of(m.header.machine.as_ref());
            (here.kind.is_none() || kind != here.kind_key())
                .then(|| format!("measured on machine kind {kind}"))
        }
    }
}

/// Sweeps every spec of `catalog` whose matrix in `dir` is missing or of another kind of
/// machine than `here`; returns what it did, a line per spec.
pub fn profile_jobs(
    catalog: &Catalog,
    dir: &Path,
    here: &MachineInfo,
    cgroup_parent: &str,
    progress: &dyn DeployProgress,
    cancel: &AtomicBool,
) -> Result<Vec<String>, DeployError> {
    let mut done = Vec::new();
    for (model, spec) in catalog.specs() {
        let output = matrix_path(dir, &spec.spec.name);
        let Some(why) = stale(&output, here) else {
            let line = format!(
                "profile {model}: {} is of this machine's kind ({}): kept",
                output.display(),
                here.kind_key()
            );
            progress.note(&line);
            done.push(line);
            continue;
        };
        progress.note(&format!(
            "profiling {model} ({}): {why}; sweeping into {}",
            spec.path.display(),
            output.display()
        ));
        let sweep = SweepOptions {
            spec: (**spec).clone(),
            output: output.clone(),
            resume: false,
            caps: true,
            mode: None,
            memory_axis: None,
            cgroup_parent: cgroup_parent.to_string(),
            kinds: crate::matrix::cell_model::KindSpeeds::default(),
        };
        let mut lines = PrefixedLines {
            prefix: format!("profile {model}"),
        };
        let outcome = run_sweep(&sweep, &mut lines, cancel).map_err(|e| DeployError::Profile {
            spec: spec.path.clone(),
            source: Box::new(e),
        })?;
        done.push(format!(
            "profile {model}: swept into {} ({why} before; {} launches, {:.0} s)",
            output.display(),
            outcome.launches,
            outcome.wall_s
        ));
    }
    Ok(done)
}
