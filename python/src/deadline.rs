//! A time limit on each call into a plug-in. A watchdog thread watches the call in progress;
//! past the limit it raises `TimeoutError` in the thread running it (CPython's asynchronous
//! exception, delivered at the plug-in's next bytecode), so a policy that loops forever stops
//! the replay with an error instead of holding it. A call blocked inside C code (a sleep, I/O)
//! is stopped when it returns to Python.

use pyo3::ffi;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The call in progress: when it started, the Python thread running it, whether the watchdog
/// raised in it.
struct Call {
    started: Instant,
    thread: std::ffi::c_ulong,
    fired: bool,
}

struct Shared {
    limit: Duration,
    call: Mutex<Option<Call>>,
    stop: AtomicBool,
}

/// The limit of a replay's plug-in calls (none: calls are not watched).
pub struct Deadline {
    shared: Option<Arc<Shared>>,
    watchdog: Mutex<Option<JoinHandle<()>>>,
}

impl Deadline {
    /// Watches calls for `limit_s` seconds each; `None`: no limit.
    pub fn new(limit_s: Option<f64>) -> PyResult<Arc<Deadline>> {
        let Some(limit_s) = limit_s else {
            return Ok(Arc::new(Deadline {
                shared: None,
                watchdog: Mutex::new(None),
            }));
        };
        if !(limit_s.is_finite() && limit_s > 0.0) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "decision_timeout {limit_s}: expected seconds above 0"
            )));
        }
        let shared = Arc::new(Shared {
            limit: Duration::from_secs_f64(limit_s),
            call: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let watched = shared.clone();
        let poll = (shared.limit / 20).clamp(Duration::from_millis(1), Duration::from_millis(20));
        let watchdog = std::thread::spawn(move || {
            while !watched.stop.load(Ordering::SeqCst) {
                std::thread::sleep(poll);
                let late = {
                    let mut call = watched.call.lock().unwrap_or_else(|e| e.into_inner());
                    match call.as_mut() {
                        Some(c) if !c.fired && c.started.elapsed() > watched.limit => {
                            c.fired = true;
                            Some(c.thread)
                        }
                        _ => None,
                    }
                };
                if let Some(thread) = late {
                    Python::attach(|_| {
                        // SAFETY: attached to the interpreter; the exception type is a static
                        // CPython object. The thread id came from the running call.
                        unsafe {
                            ffi::PyThreadState_SetAsyncExc(
                                thread as std::ffi::c_long,
                                ffi::PyExc_TimeoutError,
                            );
                        }
                    });
                }
            }
        });
        Ok(Arc::new(Deadline {
            shared: Some(shared),
            watchdog: Mutex::new(Some(watchdog)),
        }))
    }

    /// Runs `f` (a call into a plug-in, attached to the interpreter); returns its result and
    /// whether the limit stopped it.
    pub fn call<R>(&self, _py: Python<'_>, f: impl FnOnce() -> R) -> (R, bool) {
        let Some(shared) = &self.shared else {
            return (f(), false);
        };
        // SAFETY: attached to the interpreter (`_py`).
        let thread = unsafe { ffi::PyThread_get_thread_ident() };
        *shared.call.lock().unwrap_or_else(|e| e.into_inner()) = Some(Call {
            started: Instant::now(),
            thread,
            fired: false,
        });
        let result = f();
        let fired = shared
            .call
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .is_some_and(|c| c.fired);
        if fired {
            // An exception raised as the call returned would land in the next one: clear it.
            // SAFETY: attached to the interpreter; NULL clears the thread's pending exception.
            unsafe {
                ffi::PyThreadState_SetAsyncExc(thread as std::ffi::c_long, std::ptr::null_mut());
            }
        }
        (result, fired)
    }

    /// The limit in words, for errors.
    pub fn describe(&self) -> String {
        match &self.shared {
            Some(s) => format!("the decision timeout of {} s", s.limit.as_secs_f64()),
            None => "no time limit".into(),
        }
    }

    /// Stops the watchdog. Call detached from the interpreter: the watchdog may be waiting to
    /// attach.
    pub fn stop(&self) {
        if let Some(s) = &self.shared {
            s.stop.store(true, Ordering::SeqCst);
        }
        if let Some(w) = self
            .watchdog
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = w.join();
        }
    }
}
