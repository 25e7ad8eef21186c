//! Feedback to the matrices a deploy acted on: where a job kind ran at a cell its matrix
//! predicted, the deploy's rounds there become a measured cell, and the rest of the matrix is
//! predicted again (`OUT/fed-back/<model>.matrix.jsonl`, each step in `OUT/feedback.txt`).

use super::error::DeployError;
use super::journal::read_journal;
use super::observed::{GrantRates, Observed};
use crate::matrix::{CellSource, load_matrix};
use crate::predict::feedback::{FedBack, Observation, feed_back};
use crate::predict::{Library, SETTINGS, kind_folder};
use crate::replay::Scenario;
use std::path::{Path, PathBuf};

/// Where a scheme's rounds were seen, for a measured cell's note.
const SEEN: &str = "a deploy's rounds, beside the other jobs it placed";

/// Feeds the rounds of every journal under `out_dir/journal/` back into the matrices of the
/// trace's job kinds that hold predicted cells, leaning on the shipped zoo, the other
/// matrices of the profiles' folder and `libraries` (each its machine kind's folder where it
/// has one). Writes each matrix fed back to `out_dir/fed-back/` and returns a line per job kind
/// (also in `out_dir/feedback.txt`); nothing where no matrix holds predicted cells.
pub fn feed_back_matrices(
    out_dir: &Path,
    scenario: &Scenario,
    libraries: &[PathBuf],
) -> Result<Vec<String>, DeployError> {
    let trace = scenario.trace_jobs().unwrap_or_default();
    let mut models: Vec<&str> = trace.iter().map(|j| j.model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    let mut predicted = Vec::new();
    for model in models {
        let Some(i) = scenario.profiles.lookup(model) else {
            continue;
        };
        let path = PathBuf::from(&scenario.profiles.get(i).source);
        let Ok(matrix) = load_matrix(&path) else {
            continue; // the zoo's built-in profiles have no file
        };
        if matrix
            .cells
            .iter()
            .any(|c| c.source == CellSource::Predicted)
        {
            predicted.push((model, path, matrix));
        }
    }
    if predicted.is_empty() {
        return Ok(Vec::new());
    }
    let seen = seen_rates(out_dir, trace)?;
    let mut lines = Vec::new();
    for (model, path, matrix) in predicted {
        let kind = matrix.header.machine.as_ref().and_then(|m| m.kind.clone());
        let library = library_for(&path, kind.as_deref(), libraries, &matrix.header.job.name)?;
        let observed: Vec<Observation> = (seen.iter())
            .filter(|g| g.model == model)
            .map(|g| Observation {
                cpu: g.cpus,
                memory_bytes: g.mem_bytes,
                rates: g.rates.clone(),
                seconds: g.seconds,
                seen: SEEN.into(),
            })
            .collect();
        let fed = feed_back(&matrix, &observed, &library, &SETTINGS).map_err(|e| {
            DeployError::Feedback {
                path: path.clone(),
                source: Box::new(e),
            }
        })?;
        let Some(fed) = fed else {
            lines.push(format!(
                "{model}: no predicted cell of {} ran {} rounds or more",
                path.display(),
                crate::predict::feedback::MIN_RUNS
            ));
            continue;
        };
        let dir = out_dir.join("fed-back");
        std::fs::create_dir_all(&dir).map_err(DeployError::io(&dir))?;
        let to = dir.join(format!("{model}.matrix.jsonl"));
        std::fs::write(&to, fed.prediction.matrix.to_jsonl()).map_err(DeployError::io(&to))?;
        lines.extend(describe(model, &fed, &to));
    }
    let path = out_dir.join("feedback.txt");
    std::fs::write(&path, lines.join("\n") + "\n").map_err(DeployError::io(&path))?;
    Ok(lines)
}

/// The rates of every scheme's journal, pooled by job kind and grant.
fn seen_rates(
    out_dir: &Path,
    trace: &[crate::replay::job::JobSpec],
) -> Result<Vec<GrantRates>, DeployError> {
    let dir = out_dir.join("journal");
    let mut seen: Vec<GrantRates> = Vec::new();
    let paths = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect::<Vec<_>>(),
        Err(_) => Vec::new(),
    };
    for path in paths {
        let (_, rounds) = read_journal(&path)?;
        let rounds: Vec<_> = rounds.into_iter().collect();
        for g in Observed::from_rounds(trace, &rounds).by_kind() {
            match (seen.iter_mut())
                .find(|s| s.model == g.model && s.cpus == g.cpus && s.mem_bytes == g.mem_bytes)
            {
                Some(s) => {
                    s.rates.extend(&g.rates);
                    s.seconds += g.seconds;
                }
                None => seen.push(g),
            }
        }
    }
    Ok(seen)
}

/// The zoo, the other matrices of `matrix_path`'s folder and `libraries`, without job `name`.
fn library_for(
    matrix_path: &Path,
    kind: Option<&str>,
    libraries: &[PathBuf],
    name: &str,
) -> Result<Library, DeployError> {
    let mut library = Library::zoo();
    let folder = matrix_path.parent().unwrap_or(Path::new("."));
    let error = |path: &Path| {
        let path = path.to_owned();
        move |e| DeployError::Feedback {
            path,
            source: Box::new(e),
        }
    };
    library.add(folder).map_err(error(folder))?;
    for dir in libraries {
        let dir = kind_folder(dir, kind);
        library.add(&dir).map_err(error(&dir))?;
    }
    Ok(library.without(name))
}

/// A job kind's feedback in a few lines: the cells measured, and how far the rest moved.
fn describe(model: &str, fed: &FedBack, to: &Path) -> Vec<String> {
    let mut lines = vec![format!(
        "{model}: the deploy ran {} predicted cell(s) (at {} CPUs); the other {} predicted \
         again -> {}",
        fed.measured_cpus().len(),
        (fed.measured_cpus().iter())
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        fed.cells.len() - fed.measured_cpus().len(),
        to.display()
    )];
    for c in &fed.cells {
        let t = |x: &crate::matrix::Throughput| {
            format!(
                "{:.1} [{:.1}, {:.1}]",
                x.samples_per_s, x.ci95_low, x.ci95_high
            )
        };
        lines.push(format!(
            "  {} CPUs: predicted {} -> {} {}",
            c.cpu,
            t(&c.before),
            if c.measured { "measured" } else { "predicted" },
            t(&c.after)
        ));
    }
    lines
}
