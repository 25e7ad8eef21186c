//! The local backend: each job in a cgroup of its own under the profiler's parent, capped at
//! its grant (CPU quota over its CPU set, memory limit, the spec's storage throttle), suspended
//! with the cgroup freezer, re-capped in place, its progress read from its own output as a
//! sweep reads it.

use super::backend::{Backend, CountedRun, DeployJob, Exit, Grant, Regranted, Reported};
use super::catalog::restarts_to_resize;
use super::error::DeployError;
use crate::harness::cgroup::{CapsError, CgroupRoot, RunCgroup};
use crate::harness::measure::job_output::ProgressTail;
use crate::harness::memory::dataset::{block_device_of, measure_dataset};
use crate::harness::process::job_launch::{cpu_vars, job_launch};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// How long a lowered memory limit may wait for the kernel to reclaim down to it.
const RECLAIM_WAIT: Duration = Duration::from_secs(5);

struct LocalJob {
    // Dropped first: the job is stopped before its cgroup is emptied and removed.
    run: CountedRun,
    cgroup: RunCgroup,
    dataset: Option<PathBuf>,
    /// Runs so far, and the CPUs the current one started on.
    runs: u32,
    cpus: usize,
}

/// Runs jobs on this machine.
pub struct LocalBackend {
    root: CgroupRoot,
    log_dir: PathBuf,
    /// Unix time of the deploy's time 0 (reports carry Unix times).
    epoch_unix_s: f64,
    jobs: HashMap<u64, LocalJob>,
}

impl LocalBackend {
    /// Jobs' cgroups go under `parent` (opened here, which also removes what a killed
    /// profiler left there); their logs go to `log_dir`.
    pub fn open(parent: &str, log_dir: PathBuf, epoch_unix_s: f64) -> Result<Self, DeployError> {
        let root = CgroupRoot::open(parent)?;
        std::fs::create_dir_all(&log_dir).map_err(DeployError::io(&log_dir))?;
        Ok(LocalBackend {
            root,
            log_dir,
            epoch_unix_s,
            jobs: HashMap::new(),
        })
    }

    /// The CPUs the profiler's cgroups may use: what servers are carved from.
    pub fn cpus(&self) -> &[u32] {
        self.root.cpus()
    }

    fn job_error(job: &DeployJob, message: impl std::fmt::Display) -> DeployError {
        DeployError::Job {
            job_id: job.id,
            model: job.model.clone(),
            message: message.to_string(),
        }
    }

    fn running(&mut self, job: &DeployJob) -> Result<&mut LocalJob, DeployError> {
        self.jobs
            .get_mut(&job.id)
            .ok_or_else(|| Self::job_error(job, "not started (a bug of the deploy)"))
    }

    /// Whether another job still running reads `dataset`.
    fn shared(&self, dataset: &PathBuf) -> bool {
        self.jobs
            .values()
            .any(|j| j.dataset.as_ref() == Some(dataset))
    }
    /// Starts run number `runs` of `job` with `grant`, its count going on from `offset`.
    fn launch(
        &mut self,
        job: &DeployJob,
        grant: &Grant,
        runs: u32,
        offset: f64,
    ) -> Result<LocalJob, DeployError> {
        let spec = &job.spec;
        let err = |e: &dyn std::fmt::Display| Self::job_error(job, e);
        let cgroup = self
            .root
            .create_launch(&format!("{}-job{}", job.model, job.id), runs)?;
        cap(&cgroup, grant)?;
        let dataset = spec.dataset_path.clone();
        if let Some(path) = &dataset {
            // A cold cache at its first start, as the sweep that measured the job started
            // with, unless another running job reads the same files.
            if runs == 0 && !self.shared(path) {
                measure_dataset(path).map_err(|e| err(&e))?.evict();
            }
            if let Some(mb) = spec.spec.sweep.storage_read_mb_s {
                let dev = block_device_of(path).ok_or_else(|| {
                    err(&format!(
                        "sweep.storage_read_mb_s: {} is not on a block device that can be \
                         throttled",
                        path.display()
                    ))
                })?;
                cgroup.set_read_bps(dev, Some((mb * 1e6) as u64))?;
            }
        }
        let gpus = if grant.gpu_ids.is_empty() {
            Vec::new()
        } else {
            let ids: Vec<String> = grant.gpu_ids.iter().map(u32::to_string).collect();
            vec![("CUDA_VISIBLE_DEVICES".to_string(), ids.join(","))]
        };
        let vars = cpu_vars(spec, grant.cpus);
        let tag = cgroup.name().to_string();
        let (launch, paths) = job_launch(
            spec,
            &vars,
            &self.log_dir,
            &tag,
            cgroup.procs_files(),
            &gpus,
        )
        .map_err(|e| err(&e))?;
        Ok(LocalJob {
            run: CountedRun::new(
                launch.spawn().map_err(|e| err(&e))?,
                ProgressTail::new(&spec.spec, paths),
                offset,
            ),
            cgroup,
            dataset,
            runs: runs + 1,
            cpus: grant.cpu_ids.len(),
        })
    }
}

/// Caps `cgroup` at `grant`; a memory limit below what the job holds waits for reclaim.
fn cap(cgroup: &RunCgroup, grant: &Grant) -> Result<(), CapsError> {
    cgroup.set_cpu_on(grant.cpus, &grant.cpu_ids)?;
    let deadline = std::time::Instant::now() + RECLAIM_WAIT;
    loop {
        match cgroup.set_memory_limit(Some(grant.mem_bytes)) {
            Err(e) if e.is_busy() && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

impl Backend for LocalBackend {
    fn start(&mut self, job: &DeployJob, grant: &Grant, done: f64) -> Result<(), DeployError> {
        let run = self.launch(job, grant, 0, done)?;
        self.jobs.insert(job.id, run);
        Ok(())
    }

    fn regrant(&mut self, job: &DeployJob, grant: &Grant) -> Result<Regranted, DeployError> {
        let j = self.running(job)?;
        if restarts_to_resize(&job.spec) && grant.cpu_ids.len() != j.cpus {
            let (runs, done) = (j.runs, j.run.done());
            // Stopped, its cgroup removed, then started again on its new CPUs.
            self.jobs.remove(&job.id);
            let run = self.launch(job, grant, runs, done)?;
            self.jobs.insert(job.id, run);
            return Ok(Regranted::Restarted);
        }
        cap(&j.cgroup, grant)?;
        j.cgroup.set_frozen(false)?;
        Ok(Regranted::InPlace)
    }

    fn suspend(&mut self, job: &DeployJob) -> Result<(), DeployError> {
        self.running(job)?.cgroup.set_frozen(true)?;
        Ok(())
    }

    fn poll(&mut self, job: &DeployJob, out: &mut Vec<Reported>) -> Result<Exit, DeployError> {
        let epoch = self.epoch_unix_s;
        Ok(self.running(job)?.run.poll(epoch, "", out))
    }

    fn stop(&mut self, job: &DeployJob) {
        // Dropping stops the job (SIGTERM, then SIGKILL after its grace), then kills what is
        // left in its cgroup, thawed first, and removes the cgroup.
        self.jobs.remove(&job.id);
    }
}
