//! Ctrl-C and SIGTERM: set a flag the sweep checks between polls, so it stops the job, removes
//! its cgroup and keeps every finished cell, instead of dying mid-write.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Installs SIGINT/SIGTERM/SIGHUP handlers that set the returned flag. A second signal while
/// the flag is already set does not wait for the sweep: it kills every process in this
/// process's run cgroups, removes them, and exits (status 130) — the cells already written are
/// on disk, and nothing of the job is left behind.
pub fn install_cancel_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])?;
    let cancel = Arc::clone(&flag);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                if !cancel.swap(true, Ordering::SeqCst) {
                    continue;
                }
                eprintln!("interrupted again: killing the job and removing its cgroups");
                crate::harness::cgroup::kill_live_runs(Duration::from_secs(2));
                std::process::exit(130);
            }
        })?;
    Ok(flag)
}
