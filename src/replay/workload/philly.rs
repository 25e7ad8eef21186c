//! Philly traces (Microsoft, ATC'19).
//!
//! * `philly_jobs.csv` (the Philly-derived job list of the Pollux artifact): header
//!   `timestamp,duration,num_gpus,gpu_time,cluster`; timestamp `YYYY-MM-DD HH:MM:SS`.
//! * The raw `cluster_job_log` JSON: an array of jobs with `submitted_time` and
//!   `attempts[].{start_time,end_time,detail[].gpus[]}`. Read element by element. A job's GPUs
//!   are the most any attempt held; its duration the sum of its attempts' run times; jobs that
//!   never ran (no timed attempt) are left out. Errors name the line where the job starts.
//!
//! Neither names a model, so each job gets one keeping the class split (seeded), and its
//! recorded duration becomes work at the proportional share. Arrivals start at 0 at the first
//! submission.

use super::{Assigner, Binder, field, finish, for_each_line, parse_datetime};
use crate::replay::bounds;
use crate::replay::error::ReplayError;
use crate::replay::job::JobSpec;
use serde::Deserialize;
use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use std::cell::RefCell;
use std::io::Read;
use std::path::Path;
use std::rc::Rc;

pub fn read_csv(
    path: &Path,
    binder: &mut Binder,
    assign: &mut Assigner,
) -> Result<Vec<JobSpec>, ReplayError> {
    let mut raw: Vec<(usize, i64, f64, u32)> = Vec::new();
    for_each_line(path, |n, line| {
        let f: Vec<&str> = line.split(',').collect();
        if n == 1 {
            if f.first().map(|s| s.trim()) != Some("timestamp") {
                return Err(ReplayError::parse(
                    path,
                    n,
                    "expected header timestamp,duration,num_gpus,gpu_time,cluster",
                ));
            }
            return Ok(());
        }
        if f.len() < 3 {
            return Err(ReplayError::parse(
                path,
                n,
                format!("expected 5 columns, found {}", f.len()),
            ));
        }
        let ts = parse_datetime(f[0]).ok_or_else(|| {
            ReplayError::parse(
                path,
                n,
                format!("timestamp {:?} is not YYYY-MM-DD HH:MM:SS", f[0]),
            )
        })?;
        let dur: f64 = field(path, n, &f, 1, "duration")?;
        let gpus: u32 = field(path, n, &f, 2, "num_gpus")?;
        bounds::in_range("duration (s)", dur, 0.0, bounds::MAX_TIME_S)
            .map_err(|e| ReplayError::parse(path, n, e))?;
        raw.push((n, ts, dur, gpus));
        Ok(())
    })?;
    build(path, raw, binder, assign)
}

fn build(
    path: &Path,
    mut raw: Vec<(usize, i64, f64, u32)>,
    binder: &mut Binder,
    assign: &mut Assigner,
) -> Result<Vec<JobSpec>, ReplayError> {
    // Model assignment follows submission order, so sort first.
    raw.sort_by_key(|r| (r.1, r.0));
    let t0 = raw.first().map_or(0, |r| r.1);
    let mut jobs = Vec::with_capacity(raw.len());
    for (id, (n, ts, dur, gpus)) in raw.into_iter().enumerate() {
        let (model, work) = assign.assign(gpus.max(1), dur.max(1.0));
        let job = JobSpec {
            id: id as u64,
            model,
            arrival_s: (ts - t0) as f64,
            gpus,
            work_samples: work,
            cpu_request: None,
            mem_request_gb: None,
        };
        if binder.check(n, &job)? {
            jobs.push(job);
        }
    }
    finish(jobs, path)
}

#[derive(Deserialize)]
struct RawJob {
    #[serde(default)]
    submitted_time: Option<serde_json::Value>,
    #[serde(default)]
    attempts: Vec<RawAttempt>,
}

#[derive(Deserialize)]
struct RawAttempt {
    #[serde(default)]
    start_time: Option<serde_json::Value>,
    #[serde(default)]
    end_time: Option<serde_json::Value>,
    #[serde(default)]
    detail: Vec<RawDetail>,
}

#[derive(Deserialize)]
struct RawDetail {
    #[serde(default)]
    gpus: Vec<serde_json::Value>,
}

fn time(v: &Option<serde_json::Value>) -> Option<i64> {
    v.as_ref().and_then(|v| v.as_str()).and_then(parse_datetime)
}

/// Where serde_json is in the file: it reads byte by byte, peeking at most one byte ahead, so
/// counting newlines as it reads gives the line of each array element's first byte.
struct Position {
    line: usize,
    /// Looking for the first byte of the next element (set before each element).
    marked: bool,
    element_line: usize,
}

/// A reader that keeps a [`Position`] up to date.
struct Tracked<R> {
    inner: R,
    pos: Rc<RefCell<Position>>,
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut p = self.pos.borrow_mut();
        for &b in &buf[..n] {
            if p.marked && !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b',') {
                p.element_line = p.line;
                p.marked = false;
            }
            if b == b'\n' {
                p.line += 1;
            }
        }
        Ok(n)
    }
}

struct Jobs<'a>(&'a mut Vec<(usize, i64, f64, u32)>, Rc<RefCell<Position>>);

impl<'de> DeserializeSeed<'de> for Jobs<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Jobs<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON array of Philly jobs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            self.1.borrow_mut().marked = true;
            let Some(job) = seq.next_element::<RawJob>()? else {
                break;
            };
            let line = self.1.borrow().element_line;
            let Some(submitted) = time(&job.submitted_time) else {
                continue;
            };
            let mut gpus = 0u32;
            let mut dur = 0.0;
            let mut ran = false;
            for a in &job.attempts {
                if let (Some(s), Some(e)) = (time(&a.start_time), time(&a.end_time)) {
                    dur += (e - s).max(0) as f64;
                    ran = true;
                }
                gpus = gpus.max(a.detail.iter().map(|d| d.gpus.len() as u32).sum());
            }
            if ran && gpus > 0 {
                self.0.push((line, submitted, dur, gpus));
            }
        }
        Ok(())
    }
}

/// Raw `cluster_job_log` JSON. Syntax errors name the line and column (serde_json's);
/// validation errors name the line where the job's element starts.
pub fn read_json(
    path: &Path,
    binder: &mut Binder,
    assign: &mut Assigner,
) -> Result<Vec<JobSpec>, ReplayError> {
    let file = std::fs::File::open(path).map_err(ReplayError::io(path))?;
    let pos = Rc::new(RefCell::new(Position {
        line: 1,
        marked: false,
        element_line: 1,
    }));
    let mut de = serde_json::Deserializer::from_reader(Tracked {
        inner: std::io::BufReader::new(file),
        pos: Rc::clone(&pos),
    });
    let mut raw = Vec::new();
    Jobs(&mut raw, pos)
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| ReplayError::parse(path, e.line(), format!("column {}: {e}", e.column())))?;
    build(path, raw, binder, assign)
}
