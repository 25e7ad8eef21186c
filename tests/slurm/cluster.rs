//! A local single-node Slurm (scripts/local-slurm.sh) brought up for the tests and torn down when
//! the guard drops, with checks that nothing of it is left behind.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/local-slurm.sh");

/// Why a local Slurm cannot run here, if it cannot: not root, or a daemon or client missing.
pub fn unavailable() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("needs root (slurmd confines jobs with cgroups)".into());
    }
    for bin in [
        "munged",
        "slurmctld",
        "slurmd",
        "sinfo",
        "srun",
        "sbatch",
        "scontrol",
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {bin}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "{bin} not installed (apt-get install slurm-wlm slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins)"
            ));
        }
    }
    None
}

/// A running local cluster; `down` runs when it drops.
pub struct Cluster {
    dir: tempfile::TempDir,
    down_done: bool,
}

impl Cluster {
    /// Starts the cluster in a fresh directory; `prepare` may put files there first (the
    /// job-submit plugin, read at slurmctld's start).
    pub fn up(prepare: impl FnOnce(&Path)) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("profiler-slurm-")
            .tempdir_in("/tmp")
            .expect("temp dir");
        prepare(dir.path());
        let out = Command::new(SCRIPT)
            .arg("up")
            .arg(dir.path())
            .output()
            .expect("local-slurm.sh runs");
        let cluster = Cluster {
            dir,
            down_done: false,
        };
        assert!(
            out.status.success(),
            "local-slurm.sh up failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        cluster
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// A Slurm client command pointed at this cluster.
    pub fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.conf());
        c
    }

    /// Runs a Slurm client command; panics with its stderr if it fails.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self
            .cmd(program)
            .args(args)
            .output()
            .expect("slurm client runs");
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The daemons' pids, read from their pid files.
    pub fn daemon_pids(&self) -> Vec<u32> {
        ["slurmctld.pid", "slurmd.pid", "munge/munged.pid"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(self.dir().join(f)).ok())
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    }

    /// Stops the cluster and checks that no daemon, Slurm cgroup or job process is left.
    pub fn down(mut self) {
        let pids = self.daemon_pids();
        let cgroups = self.cgroups();
        self.down_done = true;
        let out = Command::new(SCRIPT)
            .arg("down")
            .arg(self.dir())
            .output()
            .expect("local-slurm.sh runs");
        assert!(
            out.status.success(),
            "local-slurm.sh down failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for pid in pids {
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "daemon {pid} still running after down"
            );
        }
        let leftover: Vec<_> = cgroups.iter().filter(|d| d.exists()).collect();
        assert!(leftover.is_empty(), "Slurm cgroups left: {leftover:?}");
    }

    /// The node's name (its slurmd's `-N`), unique to this cluster.
    pub fn node(&self) -> String {
        std::fs::read_to_string(self.dir().join("nodename"))
            .expect("nodename written by up")
            .trim()
            .to_string()
    }

    /// Where Slurm puts this cluster's cgroups (`slurm_<node>` in every v1 controller).
    pub fn cgroups(&self) -> Vec<PathBuf> {
        ["cpuset", "memory", "freezer", "cpu", "cpuacct", "devices"]
            .iter()
            .map(|c| {
                Path::new("/sys/fs/cgroup")
                    .join(c)
                    .join(format!("slurm_{}", self.node()))
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.down_done {
            let _ = Command::new(SCRIPT).arg("down").arg(self.dir()).output();
        }
    }
}
