//! Slurm's own commands as the profiler runs them: it keeps no agent of its own on the nodes.

use std::process::{Command, Stdio};

/// Cancels Slurm jobs `ids`; a job already gone, or scancel failing, is not an error (the
/// caller is stopping anyway).
pub fn scancel(ids: &[&str]) {
    if ids.is_empty() {
        return;
    }
    let _ = Command::new("scancel")
        .args(ids)
        .stdout(Stdio::null())
        .status();
}

/// Runs `program` with `args`; its standard output, trimmed, or what failed: the command
/// and its error output.
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
