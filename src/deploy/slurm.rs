//! The Slurm backend: each placed job is a Slurm job that `srun` starts with the round's CPUs
//! and memory (`--cpus-per-task`, `--mem`, on the server's node), its output read from the
//! files srun writes, as the local backend reads its own. Nothing of the project's runs on
//! the nodes. A job left out of a round is suspended with `scontrol suspend` and resumed with
//! `scontrol resume`. Slurm cannot resize a running job, so a job given other CPUs or memory
//! is cancelled and started again with them (its count goes on from where it was: the work
//! its first run did is kept).
//!
//! Slurm allocates whole CPUs: a fractional grant gets its cores rounded up, and the deploy
//! says so at its start. srun is the profiler's child: if the profiler dies, srun's death
//! ends the Slurm job.

use super::backend::{Backend, CountedRun, DeployJob, Exit, Grant, Regranted, Reported};
use super::error::DeployError;
use crate::harness::measure::job_output::ProgressTail;
use crate::harness::process::job_launch::{cpu_vars, job_launch};
use crate::slurm::run as slurm;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long a started job may take to appear in squeue.
const APPEAR_TIMEOUT: Duration = Duration::from_secs(30);

/// Where and how the deploy's Slurm jobs run.
#[derive(Debug, Clone, Default)]
pub struct SlurmTarget {
    pub partition: Option<String>,
    /// Node of each server, in server order; empty: Slurm chooses.
    pub nodes: Vec<String>,
    /// More arguments for every srun (`--account=...`).
    pub extra_args: Vec<String>,
}

struct SlurmJob {
    /// srun, its count going on from the job's earlier runs (it starts again from zero when
    /// resized).
    srun: CountedRun,
    /// Slurm's id, once squeue lists the job.
    id: Option<String>,
    name: String,
    runs: u32,
    grant: Grant,
    suspended: bool,
}

/// Runs jobs as Slurm jobs.
pub struct SlurmBackend {
    target: SlurmTarget,
    log_dir: PathBuf,
    epoch_unix_s: f64,
    /// Names the deploy's Slurm jobs (`profiler-deploy-<pid>-<job>`).
    token: String,
    jobs: HashMap<u64, SlurmJob>,
}

fn job_error(job: &DeployJob, message: impl std::fmt::Display) -> DeployError {
    DeployError::Job {
        job_id: job.id,
        model: job.model.clone(),
        message: message.to_string(),
    }
}

/// The srun arguments that give a job `grant` (whole CPUs, memory in MiB rounded up).
pub fn srun_args(name: &str, grant: &Grant, target: &SlurmTarget) -> Vec<String> {
    let mut args = vec![
        "srun".to_string(),
        "--job-name".into(),
        name.to_string(),
        "--nodes=1".into(),
        "--ntasks=1".into(),
        format!("--cpus-per-task={}", (grant.cpus.ceil() as u64).max(1)),
        format!("--mem={}M", grant.mem_bytes.div_ceil(1 << 20).max(1)),
        "--kill-on-bad-exit=1".into(),
    ];
    if let Some(p) = &target.partition {
        args.push(format!("--partition={p}"));
    }
    if let Some(node) = target.nodes.get(grant.server) {
        args.push(format!("--nodelist={node}"));
    }
    if !grant.gpu_ids.is_empty() {
        args.push(format!("--gres=gpu:{}", grant.gpu_ids.len()));
    }
    args.extend(target.extra_args.iter().cloned());
    args.push("--".into());
    args
}

impl SlurmBackend {
    pub fn new(
        target: SlurmTarget,
        log_dir: PathBuf,
        epoch_unix_s: f64,
    ) -> Result<Self, DeployError> {
        slurm("sinfo", &["-h", "-o", "%P"]).map_err(|e| {
            DeployError::Options(format!("the Slurm backend needs a Slurm cluster here: {e}"))
        })?;
        std::fs::create_dir_all(&log_dir).map_err(DeployError::io(&log_dir))?;
        Ok(SlurmBackend {
            target,
            log_dir,
            epoch_unix_s,
            token: std::process::id().to_string(),
            jobs: HashMap::new(),
        })
    }

    /// Starts run number `runs` of `job` with `grant`, its count going on from `offset`.
    fn run(
        &self,
        job: &DeployJob,
        grant: &Grant,
        runs: u32,
        offset: f64,
    ) -> Result<SlurmJob, DeployError> {
        let spec = &job.spec;
        let name = format!("profiler-deploy-{}-{}", self.token, job.id);
        let tag = format!("{}-job{}-run{runs}", job.model, job.id);
        let vars = cpu_vars(spec, grant.cpus.ceil());
        let (mut launch, paths) = job_launch(spec, &vars, &self.log_dir, &tag, Vec::new(), &[])
            .map_err(|e| job_error(job, e))?;
        // srun runs the job's own command (no shell), with the environment it is given.
        let mut argv = srun_args(&name, grant, &self.target);
        argv.append(&mut launch.argv);
        launch.argv = argv;
        Ok(SlurmJob {
            srun: CountedRun::new(
                launch.spawn().map_err(|e| job_error(job, e))?,
                ProgressTail::new(&spec.spec, paths),
                offset,
            ),
            id: None,
            name,
            runs: runs + 1,
            grant: grant.clone(),
            suspended: false,
        })
    }

    /// Slurm's id of the job named `name`, once squeue lists it.
    fn slurm_id(name: &str) -> Option<String> {
        let out = slurm("squeue", &["-h", "-n", name, "-o", "%i"]).ok()?;
        out.lines()
            .next()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
    }

    fn job(&mut self, job: &DeployJob) -> Result<&mut SlurmJob, DeployError> {
        self.jobs
            .get_mut(&job.id)
            .ok_or_else(|| job_error(job, "not started (a bug of the deploy)"))
    }

    fn control(&mut self, job: &DeployJob, action: &str) -> Result<(), DeployError> {
        let j = self.job(job)?;
        if j.id.is_none() {
            let deadline = Instant::now() + APPEAR_TIMEOUT;
            while j.id.is_none() && Instant::now() < deadline {
                j.id = Self::slurm_id(&j.name);
                if j.id.is_none() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        let id = j.id.clone().ok_or_else(|| {
            job_error(
                job,
                format!("squeue does not list Slurm job {} to {action} it", j.name),
            )
        })?;
        slurm("scontrol", &[action, &id]).map_err(|e| job_error(job, e))?;
        Ok(())
    }
}

impl Backend for SlurmBackend {
    fn start(&mut self, job: &DeployJob, grant: &Grant, done: f64) -> Result<(), DeployError> {
        let run = self.run(job, grant, 0, done)?;
        self.jobs.insert(job.id, run);
        Ok(())
    }

    fn regrant(&mut self, job: &DeployJob, grant: &Grant) -> Result<Regranted, DeployError> {
        if self.job(job)?.suspended {
            self.control(job, "resume")?;
            self.job(job)?.suspended = false;
        }
        let j = self.job(job)?;
        if j.grant == *grant || !job.resumes() {
            // One that would start its work over keeps the size it has.
            return Ok(Regranted::InPlace);
        }
        // Slurm cannot resize it: started again with the new size, its count going on.
        let (runs, done) = (j.runs, j.srun.done());
        j.srun.run.stop();
        let run = self.run(job, grant, runs, done)?;
        self.jobs.insert(job.id, run);
        Ok(Regranted::Restarted)
    }

    fn suspend(&mut self, job: &DeployJob) -> Result<(), DeployError> {
        self.control(job, "suspend")?;
        self.job(job)?.suspended = true;
        Ok(())
    }

    fn poll(&mut self, job: &DeployJob, out: &mut Vec<Reported>) -> Result<Exit, DeployError> {
        let epoch = self.epoch_unix_s;
        Ok(self.job(job)?.srun.poll(epoch, "srun ", out))
    }

    fn stop(&mut self, job: &DeployJob) {
        if let Some(mut j) = self.jobs.remove(&job.id) {
            // A suspended job takes no signal until it is resumed.
            if let (true, Some(id)) = (j.suspended, &j.id) {
                let _ = slurm("scontrol", &["resume", id]);
            }
            j.srun.run.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_asks_slurm_for_whole_cpus_and_memory_in_mib() {
        let grant = Grant {
            server: 1,
            cpus: 1.5,
            cpu_ids: vec![2, 3],
            mem_bytes: 500_000_000,
            gpus: 1,
            gpu_ids: Vec::new(),
        };
        let target = SlurmTarget {
            partition: Some("debug".into()),
            nodes: vec!["n0".into(), "n1".into()],
            extra_args: vec!["--account=prof".into()],
        };
        let args = srun_args("profiler-deploy-1-7", &grant, &target);
        for want in [
            "--cpus-per-task=2",
            "--mem=477M",
            "--partition=debug",
            "--nodelist=n1",
            "--account=prof",
        ] {
            assert!(
                args.iter().any(|a| a == want),
                "{want} missing from {args:?}"
            );
        }
        assert_eq!(
            args.last().map(String::as_str),
            Some("--"),
            "the job's argv follows"
        );
        assert!(
            !args.iter().any(|a| a.starts_with("--gres")),
            "emulated slots ask for no GPU"
        );
    }
}
