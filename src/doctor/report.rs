//! The doctor's report as text: one block per check, then the overall verdict.

use super::{Report, Verdict};
use std::fmt::Write;

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for check in &report.checks {
        let _ = writeln!(out, "{:<5} {}", check.verdict.as_str(), check.name);
        for fact in &check.facts {
            let _ = writeln!(out, "      {fact}");
        }
        if let Some(fix) = check
            .fix
            .as_ref()
            .filter(|_| check.verdict != Verdict::Pass)
        {
            let _ = writeln!(out, "      what to do: {fix}");
        }
    }
    let failed: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .map(|c| c.name)
        .collect();
    let skipped = report
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Skip)
        .count();
    let _ = if failed.is_empty() && skipped == 0 {
        writeln!(out, "\nready: this machine can profile GPU jobs")
    } else if failed.is_empty() {
        writeln!(
            out,
            "\nno check failed; {skipped} could not run here (see SKIP above)"
        )
    } else {
        writeln!(
            out,
            "\nnot ready: {} failed ({})",
            failed.len(),
            failed.join(", ")
        )
    };
    out
}
