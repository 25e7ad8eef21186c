//! The matrix file of a sweep: its header (what was swept, how, and where), appending cells as
//! they finish, and resuming from a file an interrupted sweep left.

use super::launches::add_visits;
use super::live_check::LiveCheckState;
use super::{Sweep, SweepError, search};
use crate::harness::measure::job_output::now_unix_s;
use crate::harness::sweep::plan::{MemoryLevels, Point};
use crate::matrix::{
    Axes, Cell, CellKey, JobInfo, MATRIX_KIND, Matrix, MatrixHeader, MatrixWriter, SCHEMA_VERSION,
};
use crate::spec::SweepMode;
use std::collections::HashSet;
use std::path::PathBuf;

/// The matrix a sweep writes: its header once made, the file's writer once opened, the cells
/// so far, which points are done, and where the runs' logs go.
pub(super) struct Output {
    pub header: Option<MatrixHeader>,
    pub writer: Option<MatrixWriter>,
    pub cells: Vec<Cell>,
    pub done: HashSet<CellKey>,
    pub log_dir: PathBuf,
}

impl Output {
    pub fn new(log_dir: PathBuf) -> Output {
        Output {
            header: None,
            writer: None,
            cells: Vec::new(),
            done: HashSet::new(),
            log_dir,
        }
    }

    /// The dataset's samples as the header records them (a resumed file's own; 0 where it
    /// records none).
    pub fn recorded_dataset_samples(&self) -> u64 {
        (self.header.as_ref())
            .and_then(|h| h.job.dataset_samples)
            .unwrap_or(0)
    }
}

/// The matrix file: its header, appending cells as they finish, resuming from a file an
/// interrupted sweep left.
impl Sweep<'_> {
    /// Writes the cache model's inputs, just changed, into the header.
    pub(super) fn cache_model_changed(&mut self) -> Result<(), SweepError> {
        let inputs = self.mem.cache_inputs.clone();
        self.update_header(|h| h.cache_model = inputs)
    }

    pub(super) fn make_header(&self) -> MatrixHeader {
        let spec = &self.opts.spec.spec;
        let cgroup = match (&self.root, &self.step) {
            (Some(r), _) => r.version().as_str(),
            (None, Some(_)) => "slurm",
            (None, None) => "none",
        };
        let memory_bytes = self
            .mem
            .levels
            .bytes()
            .map(|b| b.to_vec())
            .unwrap_or_default();
        let provenance = match &spec.sweep.memory_pct_of_dataset {
            Some(p) => format!(
                "profiler sweep of {}; memory levels = 1.1 x the job's resident memory after warm-up + 8 MiB + {p:?} % of the dataset",
                self.opts.spec.path.display()
            ),
            None => format!("profiler sweep of {}", self.opts.spec.path.display()),
        };
        let provenance = match self.root.as_ref().and_then(|r| r.swap_note()) {
            Some(note) => format!("{provenance}; {note}"),
            None => provenance,
        };
        let provenance = match &self.mem.memory_note {
            Some(note) => format!("{provenance}; {note}"),
            None => provenance,
        };
        let provenance = match spec.sweep.storage_read_mb_s {
            Some(mb) if self.mem.storage_throttle.is_some() => {
                format!("{provenance}; storage reads capped at {mb} MB/s (emulated slower storage)")
            }
            _ => provenance,
        };
        let provenance = match &self.mem.storage_note {
            Some(note) => format!("{provenance}; {note}"),
            None => provenance,
        };
        let provenance = match &self.step {
            Some(_) => format!(
                "{provenance}; measured in Slurm jobs under Slurm's cgroups (cpuset and memory \
                 limit of the job), one CPU level per job"
            ),
            None => provenance,
        };
        let provenance = match &self.axes.search {
            Some(search) => format!(
                "{provenance}; {}",
                search::describe(search, &self.axes.search_results)
            ),
            None => provenance,
        };
        MatrixHeader {
            kind: MATRIX_KIND.to_string(),
            schema_version: SCHEMA_VERSION,
            job: JobInfo {
                name: spec.name.clone(),
                model: self.opts.spec.model().to_string(),
                gpus: spec.gpus,
                batch_size_per_gpu: spec.batch_size_per_gpu,
                dataset_bytes: spec.dataset.as_ref().and_then(|d| d.bytes).or(self
                    .mem
                    .dataset
                    .as_ref()
                    .map(|d| d.bytes)),
                dataset_samples: spec.dataset.as_ref().and_then(|d| d.samples).or(self
                    .mem
                    .dataset
                    .as_ref()
                    .map(|d| d.files)),
            },
            machine: Some(self.machine(cgroup)),
            axes: Axes {
                cpu: self.axes.cpu.clone(),
                memory_bytes,
                params: self.axes.params.clone(),
            },
            created_unix_s: now_unix_s() as u64,
            provenance: Some(provenance),
            profiler: Some(concat!("profiler ", env!("CARGO_PKG_VERSION")).into()),
            cache_model: self.mem.cache_inputs.clone(),
            validation: None,
            live_check: match &self.live_check {
                LiveCheckState::Done(check) => Some(check.clone()),
                _ => None,
            },
            launch_spread: None,
            blocks: self.blocks.closed.clone(),
            read_at_probe_speed: None,
        }
    }

    /// This machine, with the memory bandwidth the cache model measured and the storage the
    /// dataset is read from.
    fn machine(&self, cgroup: &str) -> crate::matrix::MachineInfo {
        let mut machine = crate::machine::describe_machine(cgroup);
        machine.memory_read_bytes_per_s =
            (self.mem.cache_inputs.as_ref()).map(|c| c.memory_bytes_per_s_per_core);
        machine.storage =
            (self.opts.spec.dataset_path.as_deref()).and_then(crate::machine::storage_of);
        machine
    }

    pub(super) fn ensure_writer(&mut self) -> Result<&mut MatrixWriter, SweepError> {
        if self.out.writer.is_none() {
            let header = self.make_header();
            let (writer, kept) = MatrixWriter::create(&self.opts.output, &header)?;
            if let Some(kept) = kept {
                self.observer.warn(&format!(
                    "{} existed; its cells are kept in {} (use --resume to continue a sweep)",
                    self.opts.output.display(),
                    kept.display()
                ));
            }
            self.out.writer = Some(writer);
            self.out.header = Some(header);
        }
        Ok(self.out.writer.as_mut().expect("just created"))
    }

    pub(super) fn record(&mut self, mut cell: Cell) -> Result<(), SweepError> {
        if let Some((step, _)) = &self.step {
            cell.node = Some(step.node.clone());
        }
        // Another measurement of a recorded point joins its cell.
        let key = cell.key();
        if let Some(i) = self.out.cells.iter().position(|c| c.key() == key) {
            self.out.cells[i] = add_visits(&self.out.cells[i], &cell);
            return self.rewrite();
        }
        self.mem.note_top_level_shortfall(self.observer, &mut cell);
        self.ensure_writer()?.append(&cell)?;
        self.out.done.insert(cell.key());
        self.observer.cell_done(&cell);
        self.out.cells.push(cell);
        Ok(())
    }

    pub(super) fn resume_from_file(&mut self) -> Result<(), SweepError> {
        let (writer, matrix) = MatrixWriter::resume(&self.opts.output)?;
        let h = &matrix.header;
        let spec = &self.opts.spec.spec;
        if h.job.name != spec.name {
            return Err(SweepError::Plan(format!(
                "--resume: {} holds a matrix of job {:?}, not {:?}",
                self.opts.output.display(),
                h.job.name,
                spec.name
            )));
        }
        if h.axes.memory_bytes.len() != self.mem.levels.len() {
            return Err(SweepError::Plan(format!(
                "--resume: {} has {} memory levels but the spec now has {}; start afresh without --resume",
                self.opts.output.display(),
                h.axes.memory_bytes.len(),
                self.mem.levels.len()
            )));
        }
        let mut levels = h.axes.memory_bytes.clone();
        levels.sort_unstable_by(|a, b| b.cmp(a));
        self.mem.levels = MemoryLevels::Bytes(levels);
        self.mem.cache_inputs = h.cache_model.clone();
        if let Some(check) = &h.live_check {
            // The check is made once per sweep; a resumed one keeps its verdict.
            if check.outcome == crate::matrix::LiveCheckOutcome::Relaunch {
                self.axes.mode = SweepMode::Relaunch;
            }
            self.live_check = LiveCheckState::Done(check.clone());
        }
        self.blocks.closed = matrix.header.blocks.clone();
        self.out.done = matrix.cells.iter().map(Cell::key).collect();
        self.launches.resumed = (matrix.cells.iter())
            .flat_map(|c| c.visits.iter().map(|v| v.launch))
            .max()
            .unwrap_or(0);
        self.out.cells = matrix.cells.clone();
        self.out.header = Some(matrix.header);
        self.out.writer = Some(writer);
        self.observer.status(&format!(
            "resuming: {} cell(s) already in {}",
            self.out.cells.len(),
            self.opts.output.display()
        ));
        Ok(())
    }

    /// Changes the header of the matrix file (after the writer has started it).
    pub(super) fn update_header(
        &mut self,
        change: impl FnOnce(&mut MatrixHeader),
    ) -> Result<(), SweepError> {
        self.ensure_writer()?;
        let mut header = self
            .out
            .header
            .clone()
            .unwrap_or_else(|| self.make_header());
        change(&mut header);
        if Some(&header) != self.out.header.as_ref() {
            self.out
                .writer
                .as_mut()
                .expect("ensured")
                .replace_header(&header)?;
            self.out.header = Some(header);
        }
        Ok(())
    }

    /// Writes the header and every cell recorded so far over the matrix file.
    pub(super) fn rewrite(&mut self) -> Result<(), SweepError> {
        self.ensure_writer()?;
        let matrix = Matrix {
            header: self
                .out
                .header
                .clone()
                .unwrap_or_else(|| self.make_header()),
            cells: self.out.cells.clone(),
        };
        self.out
            .writer
            .as_mut()
            .expect("ensured")
            .replace_all(&matrix)?;
        Ok(())
    }

    /// The key of `p`'s cell, once the memory levels are sized.
    pub(super) fn key_of(&self, p: &Point) -> Option<CellKey> {
        let bytes = self.mem.levels.bytes()?;
        Some(CellKey::new(p.cpu, bytes[p.mem], &p.params))
    }

    /// The cell recorded at `p`.
    pub(super) fn recorded_cell(&self, p: &Point) -> Option<&Cell> {
        let key = self.key_of(p)?;
        self.out.cells.iter().find(|c| c.key() == key)
    }

    /// Takes the cell recorded at `p` out of the matrix (and its file), so the next visit of
    /// `p` makes a cell of its own.
    pub(super) fn take_cell(&mut self, p: &Point) -> Result<Option<Cell>, SweepError> {
        let Some(key) = self.key_of(p) else {
            return Ok(None);
        };
        let Some(i) = self.out.cells.iter().position(|c| c.key() == key) else {
            return Ok(None);
        };
        let cell = self.out.cells.remove(i);
        self.out.done.remove(&key);
        self.rewrite()?;
        Ok(Some(cell))
    }

    /// Puts `cell` back into the matrix (the file is rewritten by the caller).
    pub(super) fn put_cell(&mut self, cell: Option<Cell>) {
        if let Some(cell) = cell {
            self.out.done.insert(cell.key());
            self.out.cells.push(cell);
        }
    }
}
