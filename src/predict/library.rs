//! The jobs a prediction leans on: each a CPU curve read from a matrix, named by its job and
//! where it came from. The shipped zoo (Synergy's twelve models, one CPU curve each) is built
//! in; the matrices a user names join it.

use super::PredictError;
use super::curve::Curve;
use crate::matrix::{Cell, CellSource, Matrix, load_matrix, matrix_files, shipped_zoo};
use std::path::{Path, PathBuf};

/// One job of the library.
#[derive(Debug, Clone, PartialEq)]
pub struct LibraryJob {
    /// The job's name, as its matrix gives it.
    pub name: String,
    /// Where it came from: `zoo` or the matrix file's path.
    pub origin: String,
    /// Its rate over the CPU levels of its top memory level.
    pub curve: Curve,
}

impl LibraryJob {
    /// The job in `matrix`, from `origin`: the CPU curve of its top memory level (its first
    /// parameter combination), from cells with a rate that were not themselves predicted.
    /// `None` where fewer than two CPU levels have one.
    pub fn of(matrix: &Matrix, origin: &str) -> Option<LibraryJob> {
        let first_params = matrix.cells.first().map(|c| c.params.clone())?;
        let ours: Vec<&Cell> = (matrix.cells.iter())
            .filter(|c| c.params == first_params && c.source != CellSource::Predicted)
            .filter(|c| c.samples_per_s().is_some())
            .collect();
        let top = ours.iter().map(|c| c.memory_bytes).max()?;
        let at_top: Vec<&Cell> = ours.into_iter().filter(|c| c.memory_bytes == top).collect();
        let curve = Curve::new(rates_read_alike(&at_top))?;
        (curve.cpus().count() >= 2).then(|| LibraryJob {
            name: matrix.header.job.name.clone(),
            origin: origin.to_owned(),
            curve,
        })
    }
}

/// The `(cpu, samples/s)` of a combination's cells at one memory level, as the predictor reads
/// them. Where the sweep's cell model gave every cell a relative rate, each is that rate
/// times the samples/s of the cell at the most CPUs, the reference: the rates read at one host
/// speed, as the sweep reads its own. Otherwise the rates as measured.
pub(crate) fn rates_read_alike(cells: &[&Cell]) -> Vec<(f64, f64)> {
    let reference = (cells.iter())
        .filter(|c| c.samples_per_s().is_some())
        .max_by(|a, b| a.cpu.total_cmp(&b.cpu))
        .and_then(|c| c.samples_per_s());
    let relative: Option<Vec<(f64, f64)>> = (cells.iter())
        .map(|c| Some((c.cpu, c.relative.as_ref()?.rate * reference?)))
        .collect();
    relative.unwrap_or_else(|| {
        (cells.iter())
            .filter_map(|c| Some((c.cpu, c.samples_per_s()?)))
            .collect()
    })
}

/// The jobs a prediction leans on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Library {
    jobs: Vec<LibraryJob>,
}

impl Library {
    /// The shipped zoo alone.
    pub fn zoo() -> Library {
        let jobs = (shipped_zoo().iter())
            .filter_map(|(_, _, matrix)| LibraryJob::of(matrix, "zoo"))
            .collect();
        Library { jobs }
    }

    /// The jobs of `jobs`.
    pub fn of_jobs(jobs: Vec<LibraryJob>) -> Library {
        Library { jobs }
    }

    /// Adds every matrix file under `dir` (or `dir` itself, a matrix file), recursively: a
    /// file that cannot be read is an error naming it; a matrix with fewer than two CPU
    /// levels is passed over.
    pub fn add(&mut self, dir: &Path) -> Result<(), PredictError> {
        for path in matrix_files(dir, usize::MAX)? {
            let matrix = load_matrix(&path)?;
            if let Some(job) = LibraryJob::of(&matrix, &path.display().to_string()) {
                self.jobs.push(job);
            }
        }
        Ok(())
    }

    pub fn jobs(&self) -> &[LibraryJob] {
        &self.jobs
    }

    /// The library without the jobs named `name` (a job held out, with its copies).
    pub fn without(&self, name: &str) -> Library {
        Library {
            jobs: (self.jobs.iter())
                .filter(|j| j.name != name)
                .cloned()
                .collect(),
        }
    }
}

/// The folder of `library` a prediction for a matrix of machine `kind` reads: its kind's own
/// (`library/<kind>/`) where there is one, else the whole library.
pub fn kind_folder(library: &Path, kind: Option<&str>) -> PathBuf {
    match kind.map(|k| library.join(k)) {
        Some(dir) if dir.is_dir() => dir,
        _ => library.to_owned(),
    }
}

/// Copies the matrix at `path` (its content `matrix`) into `library`, in its machine kind's
/// folder (`library/<kind>/`, `library/unknown-kind/` where the matrix names none), under its
/// own file name; returns where it went. A kind is a folder name the profiler made
/// (`crate::machine`), never a path.
pub fn add_to_library(
    path: &Path,
    matrix: &Matrix,
    library: &Path,
) -> Result<PathBuf, PredictError> {
    let kind = (matrix.header.machine.as_ref())
        .and_then(|m| m.kind.clone())
        .filter(|k| !k.is_empty() && !k.contains(['/', '\\']) && k != "." && k != "..")
        .unwrap_or_else(|| "unknown-kind".to_owned());
    let dir = library.join(kind);
    let io = |e| PredictError::Library {
        path: dir.clone(),
        source: e,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let name = path.file_name().map_or_else(
        || format!("{}.matrix.jsonl", matrix.header.job.name),
        |n| n.to_string_lossy().into_owned(),
    );
    let to = dir.join(name);
    std::fs::copy(path, &to).map_err(io)?;
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zoo_is_twelve_curves_of_nine_levels() {
        let zoo = Library::zoo();
        assert_eq!(zoo.jobs().len(), 12);
        for job in zoo.jobs() {
            assert_eq!(job.curve.cpus().count(), 9, "{}", job.name);
            assert_eq!(job.origin, "zoo");
        }
        assert_eq!(zoo.without("bert").jobs().len(), 11);
    }

    #[test]
    fn a_finished_sweep_joins_its_kind_s_folder_and_a_prediction_reads_it() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let kind = "emerald-rapids-2t-24g-290f2493";
        let swept = root.join(format!(
            "tests/data/sweeps/{kind}/input-pipeline.1796659206.matrix.jsonl"
        ));
        let zoo = root.join("matrices/zoo/bert.matrix.jsonl");
        let library = tempfile::tempdir().unwrap();
        for path in [&swept, &zoo] {
            let to = add_to_library(path, &load_matrix(path).unwrap(), library.path()).unwrap();
            assert!(to.is_file(), "{}", to.display());
        }
        let ours = kind_folder(library.path(), Some(kind));
        assert_eq!(ours, library.path().join(kind));
        assert!(
            library
                .path()
                .join("unknown-kind/bert.matrix.jsonl")
                .is_file()
        );
        let mut lib = Library::default();
        lib.add(&ours).unwrap();
        assert_eq!(lib.jobs().len(), 1);
        assert_eq!(lib.jobs()[0].name, "input-pipeline");
        // A kind with no folder of its own reads the whole library.
        assert_eq!(kind_folder(library.path(), Some("other")), library.path());
    }

    #[test]
    fn a_missing_folder_is_named() {
        let mut lib = Library::default();
        let e = lib.add(Path::new("/nonexistent/library")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/library"), "{e}");
    }
}
