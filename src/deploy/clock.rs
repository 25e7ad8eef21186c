//! The deploy's clock: seconds since the trace's start, which a deploy lives through in real
//! time. Tests give the round loop a clock that jumps instead of sleeping.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest a deploy sleeps between two looks at the cancel flag.
const CANCEL_CHECK: Duration = Duration::from_millis(200);

pub trait Clock {
    /// Seconds since the trace's start.
    fn now(&self) -> f64;
    /// Returns at `t` (at once if it has passed), or early, `false`, once `cancel` is set.
    fn sleep_until(&mut self, t: f64, cancel: &AtomicBool) -> bool;
}

/// Real time, from the moment the deploy started (its trace's time 0, or `offset_s`).
pub struct WallClock {
    start: Instant,
    offset_s: f64,
}

impl WallClock {
    /// A clock that reads `offset_s` now.
    pub fn starting_at(offset_s: f64) -> WallClock {
        WallClock {
            start: Instant::now(),
            offset_s,
        }
    }
}

impl Clock for WallClock {
    fn now(&self) -> f64 {
        self.offset_s + self.start.elapsed().as_secs_f64()
    }

    fn sleep_until(&mut self, t: f64, cancel: &AtomicBool) -> bool {
        loop {
            if cancel.load(Ordering::SeqCst) {
                return false;
            }
            let left = t - self.now();
            if left <= 0.0 {
                return true;
            }
            std::thread::sleep(Duration::from_secs_f64(left).min(CANCEL_CHECK));
        }
    }
}
