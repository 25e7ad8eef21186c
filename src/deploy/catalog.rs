//! Which job spec runs each model of a trace: the specs of a directory (`--jobs DIR`), each
//! running the model its `model` names (or its `name`), datasets generated where missing.

use super::backend::DeployJob;
use super::error::DeployError;
use crate::harness::memory::dataset::ensure_dataset;
use crate::harness::process::job_launch::{base_vars, render_argv};
use crate::replay::engine::JobState;
use crate::replay::job::JobSpec;
use crate::replay::profile::{ProfileSet, StartCost};
use crate::spec::{LoadedSpec, SweepMode, load_spec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whether the job of `spec` sizes itself to its CPUs at start (its spec re-launches it at
/// every level, or templates the CPU count into its command) and goes on from its count when
/// started again: re-capped in place, it would keep the size it started with, so a deploy
/// starts it again instead, as from a checkpoint. One that starts its work over is re-capped
/// in place.
pub fn restarts_to_resize(spec: &LoadedSpec) -> bool {
    spec.spec.deploy.resumes
        && (spec.spec.sweep.mode == SweepMode::Relaunch || spec.depends_on_cpu_level())
}

/// The job specs of a deploy, by model.
#[derive(Debug, Clone)]
pub struct Catalog {
    dir: PathBuf,
    specs: BTreeMap<String, Arc<LoadedSpec>>,
}

impl Catalog {
    /// Loads every `*.toml` of `dir` (two specs for one model are an error naming both).
    pub fn load(dir: &Path) -> Result<Catalog, DeployError> {
        let entries = std::fs::read_dir(dir).map_err(DeployError::io(dir))?;
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        let mut specs: BTreeMap<String, Arc<LoadedSpec>> = BTreeMap::new();
        for path in paths {
            let spec = load_spec(&path)?;
            if !spec.spec.sweep.params.is_empty() {
                return Err(DeployError::Options(format!(
                    "{}: a deployed job runs one command; [sweep.params] makes it several \
                     (copy the spec once per value)",
                    path.display()
                )));
            }
            let model = spec.model().to_string();
            if let Some(other) = specs.get(&model) {
                return Err(DeployError::Options(format!(
                    "{} and {} both run model {model:?}: keep one",
                    other.path.display(),
                    path.display()
                )));
            }
            specs.insert(model, Arc::new(spec));
        }
        if specs.is_empty() {
            return Err(DeployError::Options(format!(
                "{}: no job specs (*.toml) to run the trace's jobs with",
                dir.display()
            )));
        }
        Ok(Catalog {
            dir: dir.to_owned(),
            specs,
        })
    }

    /// Checks that every job of `jobs` has a spec, and generates the datasets those specs
    /// read where they are missing (before the first round, not in it).
    pub fn prepare(&self, jobs: &[JobSpec]) -> Result<(), DeployError> {
        let mut used: BTreeMap<&str, &Arc<LoadedSpec>> = BTreeMap::new();
        for j in jobs {
            used.insert(&j.model, self.spec(&j.model, j.id)?);
        }
        for spec in used.values() {
            if let (Some(path), Some(d)) = (&spec.dataset_path, &spec.spec.dataset) {
                let generate = d
                    .generate
                    .as_ref()
                    .map(|argv| render_argv(argv, &base_vars(spec)))
                    .transpose()
                    .map_err(|e| DeployError::Options(format!("{}: {e}", spec.path.display())))?;
                ensure_dataset(path, generate.as_deref(), &spec.working_dir)
                    .map_err(|e| DeployError::Options(format!("{}: {e}", spec.path.display())))?;
            }
        }
        Ok(())
    }

    /// Every spec, by the model it runs.
    pub fn specs(&self) -> impl Iterator<Item = (&str, &Arc<LoadedSpec>)> {
        self.specs.iter().map(|(m, s)| (m.as_str(), s))
    }

    /// The spec that runs `model`, if any.
    pub fn spec_of(&self, model: &str) -> Option<&Arc<LoadedSpec>> {
        self.specs.get(model)
    }

    fn spec(&self, model: &str, job_id: u64) -> Result<&Arc<LoadedSpec>, DeployError> {
        self.specs.get(model).ok_or_else(|| DeployError::NoSpec {
            dir: self.dir.clone(),
            model: model.to_string(),
            job_id,
            known: self.specs.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    /// Gives each model's profile what starting its job costs, so the replay beside the
    /// deploy charges the start-ups the deployed jobs pay.
    pub fn set_start_costs(&self, profiles: &mut ProfileSet) {
        for (model, spec) in &self.specs {
            let cost = StartCost {
                startup_s: spec.spec.deploy.startup_s,
                restarts_to_resize: restarts_to_resize(spec),
            };
            profiles.set_start_cost(model, cost);
        }
    }

    /// The job a replay's job runs as.
    pub fn job(&self, state: &JobState) -> Result<DeployJob, DeployError> {
        Ok(DeployJob {
            id: state.spec.id,
            model: state.spec.model.clone(),
            work_samples: state.spec.work_samples,
            spec: Arc::clone(self.spec(&state.spec.model, state.spec.id)?),
        })
    }
}
