//! A job spec made into a [`Launch`]: its command and environment rendered with the variables of
//! an allocation, and the files its progress is read from. Sweeps and deploys start jobs alike.

use crate::harness::measure::job_output::ProgressPaths;
use crate::harness::process::launch::{Launch, PROGRESS_FILE_ENV, path_with_own_dir};
use crate::spec::{LoadedSpec, TemplateError, Vars, render};
use std::path::{Path, PathBuf};

/// A path made absolute against the working directory (the job runs in its own).
pub fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}

/// The variables every command of `spec` may use: `{gpus}` and `{dataset}`.
pub fn base_vars(spec: &LoadedSpec) -> Vars {
    let mut vars = Vars::new();
    vars.insert("gpus".into(), spec.spec.gpus.to_string());
    if let Some(d) = &spec.dataset_path {
        vars.insert("dataset".into(), absolute(d).display().to_string());
    }
    vars
}

/// [`base_vars`] and those of a CPU allocation: `{cpus}` and `{workers}` (whole CPUs, at
/// least one).
pub fn cpu_vars(spec: &LoadedSpec, cpus: f64) -> Vars {
    let mut vars = base_vars(spec);
    vars.insert("cpus".into(), crate::harness::sweep::plan::cpu_text(cpus));
    vars.insert("workers".into(), (cpus.ceil() as u64).max(1).to_string());
    vars
}

/// Renders every argument of `argv`.
pub fn render_argv(argv: &[String], vars: &Vars) -> Result<Vec<String>, TemplateError> {
    argv.iter().map(|a| render(a, vars)).collect()
}

/// How to start `spec` once with `vars` (from [`cpu_vars`]): its logs and progress file are
/// `<log_dir>/<tag>.*`; `cgroup_procs` are the files the child joins its cgroup through, and
/// `extra_env` comes last (a deploy's `CUDA_VISIBLE_DEVICES`).
pub fn job_launch(
    spec: &LoadedSpec,
    vars: &Vars,
    log_dir: &Path,
    tag: &str,
    cgroup_procs: Vec<PathBuf>,
    extra_env: &[(String, String)],
) -> Result<(Launch, ProgressPaths), TemplateError> {
    // The file an elastic job re-reads its batch size from: the profiler's own, by the logs.
    let control_file = absolute(&log_dir.join(format!("{tag}.batch")));
    let mut vars = vars.clone();
    vars.insert("control_file".into(), control_file.display().to_string());
    let vars = &vars;
    let argv = render_argv(&spec.spec.command, vars)?;
    let paths = ProgressPaths {
        progress_file: log_dir.join(format!("{tag}.progress.jsonl")),
        stdout: log_dir.join(format!("{tag}.stdout.log")),
        stderr: log_dir.join(format!("{tag}.stderr.log")),
    };
    let _ = std::fs::remove_file(&paths.progress_file);
    let mut env: Vec<(String, String)> = Vec::new();
    for (k, v) in &spec.spec.env {
        env.push((k.clone(), render(v, vars)?));
    }
    let var = |name: &str| vars.get(name).cloned().unwrap_or_default();
    env.push((
        PROGRESS_FILE_ENV.into(),
        absolute(&paths.progress_file).display().to_string(),
    ));
    env.push(("PROFILER_CPUS".into(), var("cpus")));
    env.push(("PROFILER_WORKERS".into(), var("workers")));
    env.push(("PATH".into(), path_with_own_dir()));
    // Python block-buffers output that is not a terminal: progress would arrive in bursts.
    if !spec.spec.env.contains_key("PYTHONUNBUFFERED") {
        env.push(("PYTHONUNBUFFERED".into(), "1".into()));
    }
    env.extend(extra_env.iter().cloned());
    let launch = Launch {
        argv,
        shell: spec.spec.shell,
        env,
        cwd: spec.working_dir.clone(),
        stdout_log: paths.stdout.clone(),
        stderr_log: paths.stderr.clone(),
        cgroup_procs,
        stop_grace: std::time::Duration::from_secs_f64(spec.spec.measure.stop_grace_s),
        terminal: spec.spec.throughput.terminal(),
    };
    Ok((launch, paths))
}
