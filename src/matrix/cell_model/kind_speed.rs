//! The probe speed a machine kind's matrices are read at. A relative rate depends on the
//! host's speed it is read at (a quota-bound cell follows the host, an accelerator-bound
//! reference does not), so every sweep of a kind reads its cells at one speed: the median of
//! the upper quartiles of the probe's readings that the kind's other sweeps recorded here.
//! A sweep's own entry is left out of its reading and replaced when it is resumed, so a
//! resumed sweep reads its cells as it did before.
//! Read at its own upper quartile instead, each of six recorded default sweeps held the
//! others' rates in 60% of pairs, against 93% at one speed (docs/findings/cell-model.md).

use super::ReadAt;
use crate::matrix::Cell;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The sweeps of a kind a reading speed remembers, the latest kept.
const REMEMBERED: usize = 25;

#[derive(Debug, thiserror::Error)]
pub enum KindSpeedError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}; expected `probe_speeds = [ ... ]` of positive numbers")]
    Parse { path: PathBuf, message: String },
}

/// The file of one machine kind's reading speeds.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindFile {
    /// Speeds of sweeps recorded before sweeps were named, oldest first: read, never written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    probe_speeds: Vec<f64>,
    /// Each sweep's upper quartile of its probe readings, oldest first.
    #[serde(default, rename = "sweep")]
    sweeps: Vec<SweepSpeed>,
}

/// One sweep's upper quartile of its probe readings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepSpeed {
    /// The sweep it was read from ([`sweep_id`]).
    id: String,
    probe_speed: f64,
}

/// What names a sweep among its kind's: its job and the time it started, which a resumed sweep
/// keeps.
pub fn sweep_id(job: &str, created_unix_s: u64) -> String {
    format!("{job}@{created_unix_s}")
}

/// The reading speeds of the machine kinds swept on this machine, one file a kind under a
/// folder of the profiler's own.
#[derive(Debug, Clone)]
pub struct KindSpeeds {
    dir: PathBuf,
}

impl Default for KindSpeeds {
    /// The folder of [`KindSpeeds::default_dir`].
    fn default() -> KindSpeeds {
        KindSpeeds::at(KindSpeeds::default_dir())
    }
}

impl KindSpeeds {
    /// `$PROFILER_STATE_DIR/kinds`, by default `/var/lib/profiler/kinds`.
    pub fn default_dir() -> PathBuf {
        std::env::var_os("PROFILER_STATE_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/var/lib/profiler"))
            .join("kinds")
    }

    pub fn at(dir: impl Into<PathBuf>) -> KindSpeeds {
        KindSpeeds { dir: dir.into() }
    }

    /// The file of `kind`: a kind's key keeps its letters, digits, `-` and `_`, and anything
    /// else becomes `_`, so no key names a path outside the folder.
    fn path(&self, kind: &str) -> PathBuf {
        let safe: String = (kind.chars())
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
                _ => '_',
            })
            .collect();
        self.dir.join(format!("{safe}.toml"))
    }

    fn load(&self, kind: &str) -> Result<KindFile, KindSpeedError> {
        let path = self.path(kind);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(KindFile::default()),
            Err(source) => return Err(KindSpeedError::Io { path, source }),
        };
        let file: KindFile = toml::from_str(&text).map_err(|e| KindSpeedError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let speeds = (file.probe_speeds.iter()).chain(file.sweeps.iter().map(|s| &s.probe_speed));
        match speeds.into_iter().all(|s| *s > 0.0 && s.is_finite()) {
            true => Ok(file),
            false => Err(KindSpeedError::Parse {
                path,
                message: "a speed is not a positive number".into(),
            }),
        }
    }

    /// How the sweep `sweep` of `kind` is read: at the median of the speeds the kind's other
    /// sweeps recorded, or, where it has none, at the sweep's own upper quartile.
    pub fn reading(&self, kind: &str, sweep: &str) -> Result<ReadAt, KindSpeedError> {
        let file = self.load(kind)?;
        let others: Vec<f64> = (file.probe_speeds.iter().copied())
            .chain(
                (file.sweeps.iter())
                    .filter(|s| s.id != sweep)
                    .map(|s| s.probe_speed),
            )
            .collect();
        Ok(match others.is_empty() {
            true => super::DEFAULT_READ_AT,
            false => ReadAt::Speed(crate::stats::median(&others)),
        })
    }

    /// Records the sweep `sweep`'s upper quartile of its probe readings (of its first
    /// parameter combination's cells) among `kind`'s speeds, in place of what it recorded
    /// before; nothing where no probe ran.
    pub fn remember(&self, kind: &str, sweep: &str, cells: &[Cell]) -> Result<(), KindSpeedError> {
        let Some(probe_speed) = super::speed_read_at(cells, super::DEFAULT_READ_AT) else {
            return Ok(());
        };
        let mut file = self.load(kind)?;
        file.sweeps.retain(|s| s.id != sweep);
        file.sweeps.push(SweepSpeed {
            id: sweep.to_owned(),
            probe_speed,
        });
        let excess = (file.probe_speeds.len() + file.sweeps.len()).saturating_sub(REMEMBERED);
        let legacy = excess.min(file.probe_speeds.len());
        file.probe_speeds.drain(..legacy);
        file.sweeps.drain(..excess - legacy);
        let path = self.path(kind);
        let io = |source| KindSpeedError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let text = format!(
            "# The host probe's upper quartile in each of this machine kind's latest sweeps; its\n\
             # matrices are read at their median (profiler sweep, docs/SWEEP.md).\n{}",
            toml::to_string(&file).expect("a list of numbers serialises")
        );
        write_atomically(&path, &text).map_err(io)
    }
}

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::fixtures::{measured, visit};
    use crate::matrix::visits::HostSpeed;

    fn probed(speeds: &[f64]) -> Vec<Cell> {
        let mut c = measured(1.0, 1 << 30, 10.0, None);
        for (i, s) in speeds.iter().enumerate() {
            let mut v = visit(1, 10.0, i as f64 * 10.0, 0.01);
            v.host = Some(HostSpeed {
                speed: *s,
                windows: Vec::new(),
                log_variance: 0.0,
            });
            c.visits.push(v);
        }
        vec![c]
    }

    /// The first sweep of a kind reads at its own upper quartile and records it; later sweeps
    /// read at the median of what the others recorded, and a resumed sweep as before.
    #[test]
    fn a_kind_remembers_its_sweeps_speeds() {
        let dir = std::env::temp_dir().join(format!("kind-speeds-{}", std::process::id()));
        let kinds = KindSpeeds::at(&dir);
        let first = sweep_id("job", 1);
        assert_eq!(
            kinds.reading("zen-5", &first).unwrap(),
            super::super::DEFAULT_READ_AT
        );
        kinds
            .remember(
                "zen-5",
                &first,
                &probed(&[100.0, 200.0, 300.0, 400.0, 500.0]),
            )
            .unwrap();
        // Resumed, the first sweep still has no other to read at.
        assert_eq!(
            kinds.reading("zen-5", &first).unwrap(),
            super::super::DEFAULT_READ_AT
        );
        kinds.remember("zen-5", "job@2", &probed(&[600.0])).unwrap();
        kinds.remember("zen-5", "job@3", &probed(&[700.0])).unwrap();
        assert_eq!(
            kinds.reading("zen-5", "job@4").unwrap(),
            ReadAt::Speed(600.0)
        );
        let before = kinds.reading("zen-5", "job@3").unwrap();
        assert!(
            matches!(before, ReadAt::Speed(s) if (s - 500.0).abs() < 1e-9),
            "{before:?}"
        );
        // The third sweep resumed and finished faster: its entry is replaced, its reading kept.
        kinds.remember("zen-5", "job@3", &probed(&[900.0])).unwrap();
        assert_eq!(kinds.reading("zen-5", "job@3").unwrap(), before);
        assert_eq!(kinds.load("zen-5").unwrap().sweeps.len(), 3);
        // Files written before sweeps were named are read, their speeds kept as others'.
        std::fs::write(dir.join("old.toml"), "probe_speeds = [10.0, 30.0]").unwrap();
        assert_eq!(kinds.reading("old", "job@1").unwrap(), ReadAt::Speed(20.0));
        kinds.remember("old", "job@1", &probed(&[50.0])).unwrap();
        assert_eq!(kinds.reading("old", "job@2").unwrap(), ReadAt::Speed(30.0));
        // At most the latest REMEMBERED speeds are kept, the oldest dropped first.
        for i in 0..REMEMBERED {
            kinds
                .remember("old", &format!("new@{i}"), &probed(&[1.0]))
                .unwrap();
        }
        let old = kinds.load("old").unwrap();
        assert!(old.probe_speeds.is_empty() && old.sweeps.len() == REMEMBERED);
        // A key with a path in it stays inside the folder.
        kinds
            .remember("../../etc/x", "job@1", &probed(&[1.0]))
            .unwrap();
        assert!(dir.join("______etc_x.toml").exists());
        std::fs::write(dir.join("bad.toml"), "probe_speeds = [-1]").unwrap();
        let err = kinds.reading("bad", "job@1").unwrap_err().to_string();
        assert!(
            err.contains("bad.toml") && err.contains("positive"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
