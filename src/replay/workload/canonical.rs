//! Our canonical trace, written by `--record` and read by `--trace`: CSV with a magic first
//! line. Floats are written with Rust's shortest round-trip formatting and parsed with the
//! standard (correctly rounded) parser, so a recorded trace replays bit-exactly.
//!
//! ```text
//! # profiler-replay-trace v1
//! job_id,model,arrival_s,gpus,work_samples,cpu_request,mem_request_gb
//! 0,resnet18,0,1,3325440,,
//! ```

use super::{Binder, field, finish, for_each_line};
use crate::replay::error::ReplayError;
use crate::replay::job::JobSpec;
use std::io::Write;
use std::path::Path;

pub const MAGIC: &str = "# profiler-replay-trace v1";
pub const COLUMNS: &str = "job_id,model,arrival_s,gpus,work_samples,cpu_request,mem_request_gb";

pub fn read(path: &Path, binder: &mut Binder) -> Result<Vec<JobSpec>, ReplayError> {
    let mut jobs = Vec::new();
    for_each_line(path, |n, line| {
        match n {
            1 if line != MAGIC => {
                return Err(ReplayError::parse(
                    path,
                    n,
                    format!("not a replay trace: first line must be {MAGIC:?}"),
                ));
            }
            1 => return Ok(()),
            2 if line != COLUMNS => {
                return Err(ReplayError::parse(
                    path,
                    n,
                    format!("expected header {COLUMNS:?}"),
                ));
            }
            2 => return Ok(()),
            _ => {}
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 7 {
            return Err(ReplayError::parse(
                path,
                n,
                format!("expected 7 columns, found {}", f.len()),
            ));
        }
        let opt = |i: usize, name: &str| -> Result<Option<f64>, ReplayError> {
            if f[i].trim().is_empty() {
                Ok(None)
            } else {
                field(path, n, &f, i, name).map(Some)
            }
        };
        let job = JobSpec {
            id: field(path, n, &f, 0, "job_id")?,
            model: f[1].trim().to_owned(),
            arrival_s: field(path, n, &f, 2, "arrival_s")?,
            gpus: field(path, n, &f, 3, "gpus")?,
            work_samples: field(path, n, &f, 4, "work_samples")?,
            cpu_request: opt(5, "cpu_request")?,
            mem_request_gb: opt(6, "mem_request_gb")?,
        };
        if binder.check(n, &job)? {
            jobs.push(job);
        }
        Ok(())
    })?;
    finish(jobs, path)
}

/// Writes jobs as a canonical trace.
pub struct Recorder {
    out: std::io::BufWriter<std::fs::File>,
    path: std::path::PathBuf,
}

impl Recorder {
    pub fn create(path: &Path) -> Result<Recorder, ReplayError> {
        let file = std::fs::File::create(path).map_err(ReplayError::io(path))?;
        let mut r = Recorder {
            out: std::io::BufWriter::new(file),
            path: path.to_owned(),
        };
        writeln!(r.out, "{MAGIC}\n{COLUMNS}").map_err(ReplayError::io(path))?;
        Ok(r)
    }

    pub fn write(&mut self, j: &JobSpec) -> Result<(), ReplayError> {
        let o = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        writeln!(
            self.out,
            "{},{},{},{},{},{},{}",
            j.id,
            j.model,
            j.arrival_s,
            j.gpus,
            j.work_samples,
            o(j.cpu_request),
            o(j.mem_request_gb)
        )
        .map_err(ReplayError::io(&self.path))
    }

    pub fn finish(mut self) -> Result<(), ReplayError> {
        self.out.flush().map_err(ReplayError::io(&self.path))
    }
}
