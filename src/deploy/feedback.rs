//! Feedback to the matrices a deploy acted on: where a job kind ran at a cell its matrix
//! predicted, the deploy's rounds there become a measured cell, and the rest of the matrix is
//! predicted again (`OUT/fed-back/<model>.matrix.jsonl`, each step in `OUT/feedback.txt`).

use super::error::DeployError;
use super::journal::read_journal;
use super::observed::{GrantRates, Observed, pooled_by_kind};
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
    let paths = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect::<Vec<_>>(),
        Err(_) => Vec::new(),
    };
    let mut schemes = Vec::new();
    for path in paths {
        let (_, rounds) = read_journal(&path)?;
        let rounds: Vec<_> = rounds.into_iter().collect();
        schemes.push(Observed::from_rounds(trace, &rounds));
    }
    Ok(pooled_by_kind(&schemes))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Matrix;
    use crate::replay::cluster::ClusterSpec;
    use crate::replay::{ReplayOptions, Semantics, WorkloadSpec};

    /// A recorded deploy (`scripts/deploy-predicted.sh light 0.5,2`, FIFO under the
    /// proportional share and Tune): light's matrix predicted from its 0.5- and 2-CPU cells.
    /// Tune gave light 0.25 CPUs, predicted at half its rate; the deploy ran it there a round.
    #[test]
    fn a_recorded_deploy_corrects_the_cells_it_ran() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let data = root.join("tests/data/feedback");
        let kind = "emerald-rapids-2t-24g-290f2493";
        let opts = ReplayOptions {
            cluster: ClusterSpec::resolve(
                &root
                    .join("workloads/deploy/cluster.toml")
                    .display()
                    .to_string(),
            )
            .unwrap(),
            profiles: Some(data.join("profiles")),
            workload: WorkloadSpec::SynergyCsv(data.join("trace.csv")),
            semantics: Semantics::Exact,
            round_s: 30.0,
            ..ReplayOptions::default()
        };
        let scenario = Scenario::load(&opts).unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(out.path().join("journal")).unwrap();
        for name in ["fifo-proportional.jsonl", "fifo-tune.jsonl"] {
            std::fs::copy(
                data.join("journal").join(name),
                out.path().join("journal").join(name),
            )
            .unwrap();
        }
        let library = root.join("tests/data/library");
        let lines =
            feed_back_matrices(out.path(), &scenario, std::slice::from_ref(&library)).unwrap();
        println!("{}", lines.join("\n"));
        let fed = load_matrix(&out.path().join("fed-back/light.matrix.jsonl")).unwrap();
        let before = load_matrix(&data.join("profiles/light.matrix.jsonl")).unwrap();
        let truth_path = (std::fs::read_dir(library.join(kind)).unwrap())
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("light.")
            })
            .unwrap();
        let truth = load_matrix(&truth_path).unwrap();
        let at = |m: &Matrix, cpu: f64| {
            let top = m.cells.iter().map(|c| c.memory_bytes).max().unwrap();
            (m.cells.iter())
                .find(|c| c.cpu == cpu && c.memory_bytes == top)
                .cloned()
                .unwrap()
        };
        let error = |m: &Matrix, cpu: f64| {
            let rate = at(m, cpu).samples_per_s().unwrap();
            (rate / at(&truth, cpu).samples_per_s().unwrap() - 1.0).abs()
        };
        let cell = at(&fed, 0.25);
        assert_eq!(cell.source, CellSource::Measured, "{:?}", cell.note);
        assert!(error(&before, 0.25) > 0.3, "{}", error(&before, 0.25));
        assert!(error(&fed, 0.25) < 0.05, "{}", error(&fed, 0.25));
        let t = cell.throughput.as_ref().unwrap();
        let truth_rate = at(&truth, 0.25).samples_per_s().unwrap();
        assert!(
            t.ci95_low <= truth_rate && truth_rate <= t.ci95_high,
            "{t:?} vs {truth_rate}"
        );
        for cpu in [0.75, 1.0, 1.25, 1.5] {
            println!(
                "light at {cpu} CPUs: error {:.1}% before, {:.1}% after",
                100.0 * error(&before, cpu),
                100.0 * error(&fed, cpu)
            );
            assert!(error(&fed, cpu) <= error(&before, cpu) + 0.01, "{cpu} CPUs");
        }
    }
}
