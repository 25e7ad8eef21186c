//! Starting a job: no shell unless the spec asks for one, its own process group, stdout and
//! stderr to log files (through a pseudo-terminal where the job's progress bar draws only on a
//! console), and (when capped) inside its cgroup before it executes anything.

use crate::harness::process::terminal::Terminal;
use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Environment variable naming the file a job appends progress lines to.
pub const PROGRESS_FILE_ENV: &str = "PROFILER_PROGRESS_FILE";

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(
        "command not found: {program:?} (looked in the working directory {cwd} and PATH){}",
        venv_hint(program)
    )]
    NotFound { program: String, cwd: PathBuf },
    #[error("working directory {0} does not exist")]
    NoWorkingDir(PathBuf),
    #[error("cannot start {program:?}: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot create log file {path}: {source}")]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the missing program is a virtual environment's interpreter, what makes it.
fn venv_hint(program: &str) -> String {
    let name = program.rsplit('/').next().unwrap_or(program);
    if !(program.contains("/bin/") && name.starts_with("python")) {
        return String::new();
    }
    let venv = program.rsplit_once("/bin/").map_or(program, |(v, _)| v);
    let made_here = if venv.ends_with("target/python-frameworks") {
        ": in this repository `scripts/python-env.sh` makes it (PyTorch, torchvision and \
         Transformers from PyPI, a few minutes)"
    } else {
        ""
    };
    format!("; it is a virtual environment's Python: create {venv} first{made_here}")
}

/// Everything needed to start one run.
#[derive(Debug, Clone)]
pub struct Launch {
    pub argv: Vec<String>,
    pub shell: bool,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub stdout_log: PathBuf,
    pub stderr_log: PathBuf,
    /// `cgroup.procs` files the child writes itself into before exec.
    pub cgroup_procs: Vec<PathBuf>,
    /// Time the job gets between SIGTERM and SIGKILL when it is stopped.
    pub stop_grace: Duration,
    /// Run the job under a pseudo-terminal ([`crate::harness::process::terminal`]): stdout and stderr
    /// both draw on it, and what they draw goes to `stdout_log` (`stderr_log` stays empty).
    pub terminal: bool,
}

/// A started job.
pub struct RunningJob {
    child: Child,
    pub stderr_log: PathBuf,
    status: Option<ExitStatus>,
    stop_grace: Duration,
}

impl Launch {
    pub fn spawn(&self) -> Result<RunningJob, LaunchError> {
        let mut cmd = self.command()?;
        let terminal = self.connect_output(&mut cmd)?;
        let CgroupEntry {
            procs,
            widen,
            every_cpu,
        } = CgroupEntry::prepare(&self.cgroup_procs);
        // SAFETY: only async-signal-safe calls (prctl, open, write, close, sched_setaffinity)
        // on data prepared before fork.
        unsafe {
            cmd.pre_exec(move || {
                // If the profiler dies without cleaning up, the job goes with it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                for path in &procs {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                    if fd < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let ok = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
                    libc::close(fd);
                    if !ok {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if widen {
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &every_cpu);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                LaunchError::NotFound {
                    program: self.argv[0].clone(),
                    cwd: self.cwd.clone(),
                }
            } else {
                LaunchError::Spawn {
                    program: self.argv[0].clone(),
                    source,
                }
            }
        })?;
        self.started(child, terminal)
    }

    /// The job's command, in its working directory with its environment, in a process group
    /// of its own; a program that cannot be found fails here, before anything is created.
    fn command(&self) -> Result<Command, LaunchError> {
        if !self.cwd.is_dir() {
            return Err(LaunchError::NoWorkingDir(self.cwd.clone()));
        }
        let mut cmd = if self.shell {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(&self.argv[0]);
            c
        } else {
            let program = &self.argv[0];
            check_program(program, &self.cwd)?;
            let mut c = Command::new(program);
            c.args(&self.argv[1..]);
            c
        };
        cmd.current_dir(&self.cwd)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            // Own process group: the terminal's Ctrl-C reaches the profiler, which then stops
            // the job in order and removes its cgroup.
            .process_group(0);
        Ok(cmd)
    }

    /// Points the job's stdout and stderr at their logs, or at a pseudo-terminal whose output
    /// is copied to the stdout log once the job has started (returned).
    fn connect_output(&self, cmd: &mut Command) -> Result<Option<Terminal>, LaunchError> {
        if !self.terminal {
            cmd.stdout(create_log(&self.stdout_log)?)
                .stderr(create_log(&self.stderr_log)?);
            return Ok(None);
        }
        let term = Terminal::open().map_err(|e| self.spawn_error(e))?;
        let (out, err) = term.job_side().map_err(|e| self.spawn_error(e))?;
        cmd.stdout(out).stderr(err);
        if !self.env.iter().any(|(k, _)| k == "TERM") {
            cmd.env("TERM", crate::harness::process::terminal::TERM);
        }
        // The other stream's log exists, empty, so readers of it find nothing new.
        create_log(&self.stderr_log)?;
        Ok(Some(term))
    }

    /// The started job, its terminal's output (if it has one) copied into the stdout log.
    fn started(&self, child: Child, terminal: Option<Terminal>) -> Result<RunningJob, LaunchError> {
        if let Some(term) = terminal {
            term.copy_into(create_log(&self.stdout_log)?)
                .map_err(|e| self.spawn_error(e))?;
        }
        Ok(RunningJob {
            child,
            stderr_log: match self.terminal {
                true => self.stdout_log.clone(),
                false => self.stderr_log.clone(),
            },
            status: None,
            stop_grace: self.stop_grace,
        })
    }

    fn spawn_error(&self, source: std::io::Error) -> LaunchError {
        LaunchError::Spawn {
            program: self.argv[0].clone(),
            source,
        }
    }
}

/// What the child needs to enter its cgroups before it executes anything, prepared before
/// fork: between fork and exec it may only make async-signal-safe calls, so nothing there
/// allocates.
struct CgroupEntry {
    /// `cgroup.procs` files to write the child into.
    procs: Vec<CString>,
    /// Whether to give the child every CPU: a job attached to a cpuset then runs on the
    /// cpuset's, as the kernel keeps them. A task written into a v1 cpuset keeps the affinity
    /// it inherited, and the thread that starts the job may have been moved off another job's
    /// CPUs while a cell was measured.
    widen: bool,
    every_cpu: libc::cpu_set_t,
}

impl CgroupEntry {
    fn prepare(cgroup_procs: &[PathBuf]) -> Self {
        let procs: Vec<CString> = cgroup_procs
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
            .collect();
        let widen = !procs.is_empty();
        // SAFETY: a plain C struct, all zero bits a valid empty set; CPU_SET stays inside it.
        let every_cpu = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for cpu in 0..libc::CPU_SETSIZE as usize {
                libc::CPU_SET(cpu, &mut set);
            }
            set
        };
        CgroupEntry {
            procs,
            widen,
            every_cpu,
        }
    }
}

/// Creates (or empties) a log file for the job's output.
fn create_log(path: &Path) -> Result<File, LaunchError> {
    File::create(path).map_err(|source| LaunchError::Log {
        path: path.to_owned(),
        source,
    })
}

/// Fails early, with a clear message, when the program cannot be found.
fn check_program(program: &str, cwd: &Path) -> Result<(), LaunchError> {
    let found = if program.contains('/') {
        cwd.join(program).exists()
    } else {
        std::env::split_paths(&path_with_own_dir()).any(|d| d.join(program).is_file())
    };
    if found {
        Ok(())
    } else {
        Err(LaunchError::NotFound {
            program: program.to_string(),
            cwd: cwd.to_owned(),
        })
    }
}

impl RunningJob {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status once the job has exited; never blocks.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Stops the job's whole process group and reaps it: SIGTERM, so a script can save a
    /// checkpoint or flush its logs, then SIGKILL after the grace period. Processes that left
    /// the group are caught by the cgroup kill.
    pub fn stop(&mut self) {
        if self.try_status().is_some() {
            return;
        }
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + self.stop_grace;
        while Instant::now() < deadline {
            if self.try_status().is_some() {
                // The leader is gone; its workers may linger in the group.
                let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        self.status = self.child.wait().ok();
    }

    /// The last `max_bytes` of stderr, trimmed to whole lines.
    pub fn stderr_tail(&self, max_bytes: u64) -> String {
        tail_of_file(&self.stderr_log, max_bytes)
    }
}

impl Drop for RunningJob {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Describes how a job ended, e.g. "exited with status 1" or "killed by SIGKILL".
pub fn describe_exit(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => match nix::sys::signal::Signal::try_from(sig) {
            Ok(s) => format!("killed by {s}"),
            Err(_) => format!("killed by signal {sig}"),
        },
        _ => "ended".to_string(),
    }
}

pub fn tail_of_file(path: &Path, max_bytes: u64) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max_bytes);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let text = if start > 0 {
        text.split_once('\n').map_or(&*text, |(_, rest)| rest)
    } else {
        &text
    };
    text.trim_end().to_string()
}

/// PATH with the profiler's own directory first, so binaries shipped beside it (such as
/// `input-pipeline`) resolve for jobs and dataset generators.
pub fn path_with_own_dir() -> String {
    let own = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_owned));
    let mut dirs: Vec<PathBuf> = own.into_iter().collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_venv_python_says_what_makes_it() {
        let e = check_program(
            "../../../target/python-frameworks/bin/python",
            Path::new("/"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("scripts/python-env.sh"), "{e}");
        let e = check_program("/opt/env/bin/python3", Path::new("/"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("create /opt/env first") && !e.contains("python-env.sh"),
            "{e}"
        );
        let e = check_program("no-such-tool", Path::new("/"))
            .unwrap_err()
            .to_string();
        assert!(!e.contains("virtual environment"), "{e}");
    }
}
