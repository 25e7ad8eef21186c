//! The order in which the job opens its dataset's files, which the page-cache model replays an
//! LRU cache over ([`crate::cache_model::lru_hit_curve`]) instead of assuming a fresh shuffle.
//!
//! fanotify, not inotify: its events name the process that opened the file, so the profiler's
//! own opens (evicting the dataset, asking what of it is cached) stay out of the trace, and the
//! opened file is identified by its device and inode, whatever path the job used. It needs
//! `CAP_SYS_ADMIN`, as the cgroup caps do; without it there is no trace and the model keeps
//! its shuffle.

use nix::errno::Errno;
use nix::sys::fanotify::{EventFFlags, Fanotify, InitFlags, MarkFlags, MaskFlags};
use std::collections::{BTreeSet, HashMap};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;
use thiserror::Error;

/// Most dataset files traced: every file is looked up once at the start (a million take
/// seconds), and a dataset that large is read for less than an epoch per cell anyway.
pub const MAX_TRACED_FILES: usize = 200_000;
/// Most directories watched (one fanotify mark each).
pub const MAX_TRACED_DIRS: usize = 4096;
/// Most opens kept: tens of epochs of the largest dataset traced.
pub const MAX_OPENS: usize = 4_000_000;
/// How often the queue is read when empty; it holds 16,384 events, minutes of opens. fanotify
/// merges an open into one of the same file still unread in the queue: a file opened twice
/// within this time counts once (both reads hit in any cache).
const POLL: Duration = Duration::from_millis(20);

#[derive(Debug, Error)]
pub enum OpenTraceError {
    #[error("{files} dataset files, more than the {MAX_TRACED_FILES} traced")]
    TooManyFiles { files: usize },
    #[error(
        "the dataset's files lie in {dirs} directories, more than the {MAX_TRACED_DIRS} watched"
    )]
    TooManyDirs { dirs: usize },
    #[error("fanotify is not available ({0}): it needs root (CAP_SYS_ADMIN)")]
    Init(#[source] Errno),
    #[error("cannot watch {path} with fanotify: {source}")]
    Mark {
        path: PathBuf,
        #[source]
        source: Errno,
    },
    #[error("cannot read {path}: {source}")]
    Stat {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot start the trace's thread: {0}")]
    Thread(#[source] io::Error),
}

/// What a trace saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Opens {
    /// Indices into the traced paths, in the order other processes opened them.
    pub files: Vec<u32>,
    /// What each traced file takes in the page cache (whole pages), bytes.
    pub sizes: Vec<u64>,
    /// The kernel's queue overflowed and dropped opens: the order has gaps.
    pub overflowed: bool,
}

/// A trace running in a thread of its own until [`OpenTrace::finish`] (or drop).
pub struct OpenTrace {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Opens>>,
}

impl OpenTrace {
    /// Starts recording opens of `paths` by any process but this one.
    pub fn start(paths: &[PathBuf]) -> Result<Self, OpenTraceError> {
        if paths.len() > MAX_TRACED_FILES {
            return Err(OpenTraceError::TooManyFiles { files: paths.len() });
        }
        let page = procfs::page_size();
        let mut index = HashMap::with_capacity(paths.len());
        let mut sizes = Vec::with_capacity(paths.len());
        let mut dirs = BTreeSet::new();
        for (i, path) in paths.iter().enumerate() {
            let m = std::fs::metadata(path).map_err(|source| OpenTraceError::Stat {
                path: path.clone(),
                source,
            })?;
            index.insert((m.dev(), m.ino()), i as u32);
            sizes.push(m.len().div_ceil(page) * page);
            if let Some(dir) = path.parent() {
                dirs.insert(dir.to_path_buf());
            }
        }
        if dirs.len() > MAX_TRACED_DIRS {
            return Err(OpenTraceError::TooManyDirs { dirs: dirs.len() });
        }
        let fan = Fanotify::init(
            InitFlags::FAN_CLASS_NOTIF | InitFlags::FAN_CLOEXEC | InitFlags::FAN_NONBLOCK,
            EventFFlags::O_RDONLY | EventFFlags::O_LARGEFILE | EventFFlags::O_CLOEXEC,
        )
        .map_err(OpenTraceError::Init)?;
        for dir in &dirs {
            fan.mark(
                MarkFlags::FAN_MARK_ADD,
                MaskFlags::FAN_OPEN | MaskFlags::FAN_EVENT_ON_CHILD,
                nix::fcntl::AT_FDCWD,
                Some(dir.as_path()),
            )
            .map_err(|source| OpenTraceError::Mark {
                path: dir.clone(),
                source,
            })?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("open-trace".into())
            .spawn(move || Opens {
                sizes,
                ..record(&fan, &index, &stopping)
            })
            .map_err(OpenTraceError::Thread)?;
        Ok(OpenTrace {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the trace and returns what it saw.
    pub fn finish(mut self) -> Opens {
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> Opens {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for OpenTrace {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// Reads events until `stop`, then drains the queue once more.
fn record(fan: &Fanotify, index: &HashMap<(u64, u64), u32>, stop: &AtomicBool) -> Opens {
    let own = std::process::id() as i32;
    let mut opens = Opens::default();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        match fan.read_events() {
            Ok(events) => {
                for e in events {
                    if e.mask().contains(MaskFlags::FAN_Q_OVERFLOW) {
                        opens.overflowed = true;
                        continue;
                    }
                    if e.pid() == own || opens.files.len() >= MAX_OPENS {
                        continue;
                    }
                    let Some(fd) = e.fd() else { continue };
                    if let Ok(st) = nix::sys::stat::fstat(fd)
                        && let Some(&i) = index.get(&(st.st_dev, st.st_ino))
                    {
                        opens.files.push(i);
                    }
                }
            }
            Err(Errno::EAGAIN) if stopping => return opens,
            Err(Errno::EAGAIN | Errno::EINTR) => std::thread::sleep(POLL),
            Err(_) => return opens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Opens by another process are recorded in order; this process's own are not.
    #[test]
    fn records_other_processes_opens_in_order_and_not_its_own() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIPPED: fanotify needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("b");
        std::fs::create_dir(&sub).unwrap();
        let paths: Vec<PathBuf> = ["a0", "a1"]
            .iter()
            .map(|n| dir.path().join(n))
            .chain([sub.join("b0")])
            .collect();
        for p in &paths {
            std::fs::write(p, b"x").unwrap();
        }
        let trace = OpenTrace::start(&paths).expect("root has fanotify");
        // Our own read is not the job's.
        std::fs::File::open(&paths[0])
            .unwrap()
            .read_to_end(&mut Vec::new())
            .unwrap();
        // Apart by more than the trace's poll: fanotify merges an open of a file into one of
        // the same file still unread in its queue.
        for i in [2usize, 0, 1, 2] {
            let status = std::process::Command::new("cat")
                .arg(&paths[i])
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            std::thread::sleep(POLL * 4);
        }
        let opens = trace.finish();
        assert_eq!(opens.files, vec![2, 0, 1, 2]);
        assert!(!opens.overflowed);
    }

    #[test]
    fn refuses_datasets_it_would_not_trace() {
        let many: Vec<PathBuf> = (0..=MAX_TRACED_FILES)
            .map(|i| PathBuf::from(format!("/x/{i}")))
            .collect();
        assert!(matches!(
            OpenTrace::start(&many),
            Err(OpenTraceError::TooManyFiles { .. })
        ));
        assert!(matches!(
            OpenTrace::start(&[PathBuf::from("/nonexistent/file")]),
            Err(OpenTraceError::Stat { .. })
        ));
    }
}
