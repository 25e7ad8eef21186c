//! Text summary table and comparison ratios. The CSV / Parquet tables are in [`super::tables`].

use super::ReplaySummary;
use std::fmt::Write as _;

/// `x` with `prec` decimals, or `-` where it is undefined (never `NaN` or `inf` in a table).
fn num(x: f64, prec: usize) -> String {
    if x.is_finite() {
        format!("{x:.prec$}")
    } else {
        "-".into()
    }
}

/// Seconds as hours, `-` where undefined.
fn h(s: f64) -> String {
    num(s / 3600.0, 2)
}

/// `a / b`, `-` where undefined (a zero or missing denominator).
fn ratio(a: f64, b: f64) -> String {
    if b != 0.0 {
        num(a / b, 2)
    } else {
        num(f64::NAN, 2)
    }
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
            "{:<8} {:<13} {:>6} {:>8}h {:>8}h {:>8}h {:>9}h {:>8}h {:>6} {:>5} {:>5} {:>5} {:>5} {:>8} {:>8}",
            m.policy,
            m.mechanism,
            m.jobs_measured,
            h(m.mean_jct_s),
            h(m.median_jct_s),
            h(m.p99_jct_s),
            h(m.makespan_s),
            h(m.mean_queue_s),
            num(m.mean_ftf_rho, 2),
            num(m.gpu_alloc * 100.0, 1),
            num(m.cpu_alloc * 100.0, 1),
            num(m.mem_alloc * 100.0, 1),
            num(m.gpu_use * 100.0, 1),
            num(m.mean_decision_ms, 3),
            num(m.wall_s, 3)
        );
    }
    for r in &s.runs {
        if let Some(x) = r.summary.lp_rounding_ratio {
            let _ = writeln!(
                o,
                "{}+opt: rounded allocation reaches {}% of the LP bound on average ({} LP failures)",
                r.summary.policy,
                num(x * 100.0, 1),
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
    o.push_str(&render_verdicts(&s.verdicts));
    o
}

/// A line per scheme's verdict on its gain over the proportional share, where made.
pub fn render_verdicts(verdicts: &[super::verdict::Verdict]) -> String {
    let mut o = String::new();
    if verdicts.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\nverdicts (replays on matrices drawn within their cells' 95% intervals):"
    );
    for v in verdicts {
        let _ = writeln!(o, "  {}", v.describe());
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
            "{:<8} {:<13} {:>6}x {:>6}x {:>6}x",
            b.policy,
            b.mechanism,
            ratio(a.mean_jct_s, b.mean_jct_s),
            ratio(a.p99_jct_s, b.p99_jct_s),
            ratio(a.makespan_s, b.makespan_s)
        );
    }
    o
}
