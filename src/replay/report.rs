//! Text summary table, comparison ratios and CSV outputs.

use super::error::ReplayError;
use super::{ReplaySummary, RunResult};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

fn h(s: f64) -> String {
    format!("{:.2}", s / 3600.0)
}

/// The summary table (hours for times).
pub fn render(s: &ReplaySummary) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "cluster:   {}", s.cluster);
    let _ = writeln!(o, "profiles:  {}", s.profiles);
    let _ = writeln!(o, "workload:  {}", s.workload);
    let _ = writeln!(o, "semantics: {:?}", s.semantics);
    if s.skipped_wide_jobs > 0 {
        let _ = writeln!(
            o,
            "skipped:   {} jobs wider than any server",
            s.skipped_wide_jobs
        );
    }
    let _ = writeln!(
        o,
        "\n{:<8} {:<13} {:>6} {:>9} {:>9} {:>9} {:>10} {:>9} {:>6} {:>5} {:>5} {:>5} {:>5} {:>8} {:>8}",
        "policy",
        "mechanism",
        "jobs",
        "mean JCT",
        "med JCT",
        "p99 JCT",
        "makespan",
        "queue",
        "FTF",
        "GPU%",
        "CPU%",
        "mem%",
        "GPUu%",
        "dec ms",
        "wall s"
    );
    for r in &s.runs {
        let m = &r.summary;
        let _ = writeln!(
            o,
            "{:<8} {:<13} {:>6} {:>8}h {:>8}h {:>8}h {:>9}h {:>8}h {:>6.2} {:>5.1} {:>5.1} {:>5.1} {:>5.1} {:>8.3} {:>8.3}",
            m.policy,
            m.mechanism,
            m.jobs_measured,
            h(m.mean_jct_s),
            h(m.median_jct_s),
            h(m.p99_jct_s),
            h(m.makespan_s),
            h(m.mean_queue_s),
            m.mean_ftf_rho,
            m.gpu_alloc * 100.0,
            m.cpu_alloc * 100.0,
            m.mem_alloc * 100.0,
            m.gpu_use * 100.0,
            m.mean_decision_ms,
            m.wall_s
        );
    }
    for r in &s.runs {
        if let Some(x) = r.summary.lp_rounding_ratio {
            let _ = writeln!(
                o,
                "{}+opt: rounded allocation reaches {:.1}% of the LP bound on average ({} LP failures)",
                r.summary.policy,
                x * 100.0,
                r.summary.lp_failures
            );
        }
        if r.summary.unfinished > 0 {
            let _ = writeln!(
                o,
                "{}+{}: {} jobs unfinished when the replay stopped",
                r.summary.policy, r.summary.mechanism, r.summary.unfinished
            );
        }
    }
    let ratios = render_ratios(s);
    if !ratios.is_empty() {
        o.push('\n');
        o.push_str(&ratios);
    }
    o
}

/// Improvement over proportional with the same policy: proportional's value / this value.
pub fn render_ratios(s: &ReplaySummary) -> String {
    let mut o = String::new();
    for r in &s.runs {
        if r.summary.mechanism == "proportional" {
            continue;
        }
        let Some(base) = s.runs.iter().find(|b| {
            b.summary.mechanism == "proportional" && b.summary.policy == r.summary.policy
        }) else {
            continue;
        };
        if o.is_empty() {
            let _ = writeln!(
                o,
                "vs proportional (x = proportional / this; > 1 is better): mean JCT, p99 JCT, makespan"
            );
        }
        let (a, b) = (&base.summary, &r.summary);
        let _ = writeln!(
            o,
            "{:<8} {:<13} {:>6.2}x {:>6.2}x {:>6.2}x",
            b.policy,
            b.mechanism,
            a.mean_jct_s / b.mean_jct_s,
            a.p99_jct_s / b.p99_jct_s,
            a.makespan_s / b.makespan_s
        );
    }
    o
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn write_file(path: &Path, text: &str) -> Result<(), ReplayError> {
    let mut f = std::fs::File::create(path).map_err(ReplayError::io(path))?;
    f.write_all(text.as_bytes()).map_err(ReplayError::io(path))
}

/// `<dir>/<policy>-<mechanism>.jobs.csv` and `.rounds.csv` per run, and `summary.csv`.
pub fn write_csvs(s: &ReplaySummary, dir: &Path) -> Result<(), ReplayError> {
    std::fs::create_dir_all(dir).map_err(ReplayError::io(dir))?;
    let mut sum = String::from(
        "policy,mechanism,jobs,mean_jct_s,median_jct_s,p99_jct_s,makespan_s,mean_queue_s,mean_ftf_rho,max_ftf_rho,gpu_alloc,cpu_alloc,mem_alloc,gpu_use,cpu_use,mem_use,rounds,mean_decision_ms,max_decision_ms,wall_s\n",
    );
    for r in &s.runs {
        let m = &r.summary;
        let _ = writeln!(
            sum,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            m.policy,
            m.mechanism,
            m.jobs_measured,
            m.mean_jct_s,
            m.median_jct_s,
            m.p99_jct_s,
            m.makespan_s,
            m.mean_queue_s,
            m.mean_ftf_rho,
            m.max_ftf_rho,
            m.gpu_alloc,
            m.cpu_alloc,
            m.mem_alloc,
            m.gpu_use,
            m.cpu_use,
            m.mem_use,
            m.rounds,
            m.mean_decision_ms,
            m.max_decision_ms,
            m.wall_s
        );
        write_run(r, dir)?;
    }
    write_file(&dir.join("summary.csv"), &sum)
}

fn write_run(r: &RunResult, dir: &Path) -> Result<(), ReplayError> {
    let stem = format!("{}-{}", r.summary.policy, r.summary.mechanism);
    let mut j = String::from(
        "job_id,model,gpus,arrival_s,start_s,finish_s,jct_s,queue_s,alone_proportional_s,alone_best_s,ftf_rho,rounds_run,gpu_s,cpu_request,mem_request_gb\n",
    );
    for x in &r.jobs {
        let _ = writeln!(
            j,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            x.id,
            x.model,
            x.gpus,
            x.arrival_s,
            opt(x.start_s),
            opt(x.finish_s),
            opt(x.jct_s),
            opt(x.queue_s),
            x.alone_proportional_s,
            x.alone_best_s,
            opt(x.ftf_rho),
            x.rounds_run,
            x.gpu_s,
            opt(x.cpu_request),
            opt(x.mem_request_gb)
        );
    }
    write_file(&dir.join(format!("{stem}.jobs.csv")), &j)?;
    let mut t = String::from(
        "t_s,active,running,gpus,cpus,mem_gb,gpu_use,cpu_use,mem_use,decision_s,lp_bound,lp_rounded\n",
    );
    for x in &r.rounds {
        let _ = writeln!(
            t,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            x.t,
            x.active,
            x.running,
            x.gpus,
            x.cpus,
            x.mem_gb,
            x.gpu_use,
            x.cpu_use,
            x.mem_use,
            x.decision_s,
            opt(x.lp_bound),
            opt(x.lp_rounded)
        );
    }
    write_file(&dir.join(format!("{stem}.rounds.csv")), &t)
}
