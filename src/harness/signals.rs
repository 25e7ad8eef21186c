//! Ctrl-C and SIGTERM: set a flag the sweep checks between polls, so it stops the job, removes
//! its cgroup and keeps every finished cell, instead of dying mid-write.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Installs SIGINT/SIGTERM/SIGHUP handlers that set the returned flag. A second signal while
/// the flag is already set terminates the process at once (exit status 130).
pub fn install_cancel_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag))?;
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}
