//! Text summary table and comparison ratios. The CSV / Parquet tables are in [`super::tables`].

use super::ReplaySummary;
use std::fmt::Write as _;

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
