//! A deploy's journal: one JSON line per round it finished, with how far each placed job got,
//! so that `--resume` can go on after a crash. A resumed deploy runs the engine again over the
//! journal's rounds, taking each job's progress from the journal instead of running it (the
//! engine decides as it did, since it decides from the same state), and then runs the rest for
//! real, starting the jobs again where their specs say they resume.

use super::error::DeployError;
use crate::replay::job::JobSpec;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

const KIND: &str = "profiler-deploy-journal";

/// What a journal was written for: a resume checks it against the deploy it goes on with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalHeader {
    pub kind: String,
    /// Policy and mechanism, `fifo+tune`.
    pub scheme: String,
    pub round_s: f64,
    /// The trace, in brief: its jobs, their total work and the last arrival.
    pub jobs: usize,
    pub work_samples: f64,
    pub last_arrival_s: f64,
}

impl JournalHeader {
    pub fn new(scheme: &str, round_s: f64, trace: &[JobSpec]) -> Self {
        JournalHeader {
            kind: KIND.into(),
            scheme: scheme.into(),
            round_s,
            jobs: trace.len(),
            work_samples: trace.iter().map(|j| j.work_samples).sum(),
            last_arrival_s: trace.iter().map(|j| j.arrival_s).fold(0.0, f64::max),
        }
    }

    /// What differs from `other`, in words; `None` when they match.
    fn differs(&self, other: &JournalHeader) -> Option<String> {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        if self.scheme != other.scheme {
            Some(format!("scheme {} (now {})", self.scheme, other.scheme))
        } else if !close(self.round_s, other.round_s) {
            Some(format!(
                "--round-s {} (now {})",
                self.round_s, other.round_s
            ))
        } else if self.jobs != other.jobs
            || !close(self.work_samples, other.work_samples)
            || !close(self.last_arrival_s, other.last_arrival_s)
        {
            Some(format!(
                "a trace of {} jobs, {:.0} samples in all (now {} jobs, {:.0} samples)",
                self.jobs, self.work_samples, other.jobs, other.work_samples
            ))
        } else {
            None
        }
    }
}

/// How far a placed job got in a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOutcome {
    pub id: u64,
    /// Samples of work left when the round ended.
    pub remaining: f64,
    /// Seconds of the round it ran.
    pub ran_s: f64,
    /// The instant its work ran out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<f64>,
    /// Why it could not go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The cores and memory it held in the round (a report's timeline tells re-caps from
    /// them); absent in older journals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_bytes: Option<u64>,
    /// It was stopped and started again for this round's grant (a job that sizes itself at
    /// start); false in older journals.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restarted: bool,
}

/// A round the deploy finished: its start and its placed jobs, in placement order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    pub t: f64,
    pub round_s: f64,
    pub jobs: Vec<JobOutcome>,
}

impl RoundRecord {
    pub fn end(&self) -> f64 {
        self.t + self.round_s
    }
}

/// The journal being written, and the rounds a resume takes from the last one.
pub struct Journal {
    path: PathBuf,
    file: File,
    /// Rounds read back, not yet gone over again.
    pub pending: VecDeque<RoundRecord>,
}

impl Journal {
    /// Starts a journal at `path` for `header`, or with `resume`, goes on with the one there
    /// (its rounds become [`Journal::pending`]); a missing journal starts afresh either way.
    pub fn open(path: &Path, header: &JournalHeader, resume: bool) -> Result<Self, DeployError> {
        let pending = match resume {
            true if path.exists() => read(path, header)?,
            _ => VecDeque::new(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(DeployError::io(dir))?;
        }
        let mut journal = Journal {
            path: path.to_owned(),
            file: File::create(path).map_err(DeployError::io(path))?,
            pending: VecDeque::new(),
        };
        // Written again as read: a journal without its torn last line, which a later resume
        // reads as well.
        journal.append(header)?;
        for round in &pending {
            journal.append(round)?;
        }
        journal.pending = pending;
        Ok(journal)
    }

    /// The error for a round this deploy decided otherwise than the journal says.
    pub fn mismatch(&self, message: String) -> DeployError {
        DeployError::JournalMismatch {
            path: self.path.clone(),
            message: format!(
                "{message}: the trace, matrices, cluster or scheme changed since it was \
                 written; start again without --resume"
            ),
        }
    }

    /// Where the deploy's time goes on from: the end of the last round read back.
    pub fn resumes_at(&self) -> Option<f64> {
        self.pending.back().map(RoundRecord::end)
    }

    /// Appends a line and puts it on disk (a crash after this keeps the round).
    pub fn append(&mut self, line: &impl Serialize) -> Result<(), DeployError> {
        let mut text = serde_json::to_string(line).map_err(|e| DeployError::Journal {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(DeployError::io(&self.path))
    }
}

/// The rounds of the journal at `path`, checked against `header`.
fn read(path: &Path, header: &JournalHeader) -> Result<VecDeque<RoundRecord>, DeployError> {
    let (written, rounds) = read_journal(path)?;
    if let Some(what) = written.differs(header) {
        return Err(DeployError::Journal {
            path: path.to_owned(),
            line: 1,
            message: format!(
                "written for {what}: resume with the options it was started with, or start \
                 again without --resume"
            ),
        });
    }
    Ok(rounds)
}

/// The header and the rounds of the journal at `path`. A last line cut short (the deploy died
/// writing it) is left out; any other line that does not parse is an error.
pub fn read_journal(path: &Path) -> Result<(JournalHeader, VecDeque<RoundRecord>), DeployError> {
    let file = File::open(path).map_err(DeployError::io(path))?;
    let error = |line: usize, message: String| DeployError::Journal {
        path: path.to_owned(),
        line,
        message,
    };
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(DeployError::io(path))?;
    let first = lines
        .first()
        .ok_or_else(|| error(1, "empty: no header line".into()))?;
    let written: JournalHeader = serde_json::from_str(first)
        .map_err(|e| error(1, format!("expected the journal's header: {e}")))?;
    if written.kind != KIND {
        return Err(error(
            1,
            format!("kind {:?}, expected {KIND:?}", written.kind),
        ));
    }
    let mut rounds = VecDeque::new();
    for (i, line) in lines.iter().enumerate().skip(1) {
        match serde_json::from_str::<RoundRecord>(line) {
            Ok(r) => rounds.push_back(r),
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => return Err(error(i + 1, format!("expected a round: {e}"))),
        }
    }
    Ok((written, rounds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> JournalHeader {
        JournalHeader {
            kind: KIND.into(),
            scheme: "fifo+tune".into(),
            round_s: 30.0,
            jobs: 2,
            work_samples: 1000.0,
            last_arrival_s: 10.0,
        }
    }

    fn round(t: f64) -> RoundRecord {
        RoundRecord {
            t,
            round_s: 30.0,
            jobs: vec![JobOutcome {
                id: 1,
                remaining: 500.0 - t,
                ran_s: 30.0,
                finish: None,
                failure: Some("exited".into()),
                cpus: Some(0.5),
                mem_bytes: Some(1 << 30),
                restarted: false,
            }],
        }
    }

    #[test]
    fn rounds_written_are_read_back_and_a_torn_last_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let mut j = Journal::open(&path, &header(), true).unwrap();
        assert!(j.pending.is_empty(), "no journal yet: a fresh start");
        j.append(&round(0.0)).unwrap();
        j.append(&round(30.0)).unwrap();
        drop(j);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"t\":60.0,\"round_s\":30");
        std::fs::write(&path, text).unwrap();
        let j = Journal::open(&path, &header(), true).unwrap();
        assert_eq!(j.pending, [round(0.0), round(30.0)]);
        assert_eq!(j.resumes_at(), Some(60.0));
        drop(j);
        // Written again without the torn line; a fresh start empties it.
        let again = Journal::open(&path, &header(), true).unwrap();
        assert_eq!(again.pending.len(), 2);
        drop(again);
        assert!(
            Journal::open(&path, &header(), false)
                .unwrap()
                .pending
                .is_empty()
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
    }

    #[test]
    fn a_journal_of_another_deploy_or_a_broken_line_is_an_error_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        drop(Journal::open(&path, &header(), false).unwrap());
        let other = JournalHeader {
            scheme: "srtf+tune".into(),
            ..header()
        };
        let e = Journal::open(&path, &other, true)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("j.jsonl:1") && e.contains("scheme fifo+tune"),
            "{e}"
        );
        let mut j = Journal::open(&path, &header(), false).unwrap();
        j.append(&round(0.0)).unwrap();
        drop(j);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            format!(
                "{text}not json\n{}\n",
                serde_json::to_string(&round(30.0)).unwrap()
            ),
        )
        .unwrap();
        let e = Journal::open(&path, &header(), true)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("j.jsonl:3") && e.contains("expected a round"),
            "{e}"
        );
    }
}
