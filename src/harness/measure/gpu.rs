//! GPU telemetry through NVML, loaded at run time.
//!
//! `nvml-wrapper` opens `libnvidia-ml` with `dlopen`, so the same binary runs on machines with no
//! GPU or no driver: [`open_nvml`] then returns [`GpuError::Unavailable`] and callers use
//! [`GpuMonitor::disabled`], whose [`GpuMonitor::window_summary`] is always `None`.
//!
//! NVML is initialised at most once per process (see [`nvml`]); a failed initialisation is
//! remembered and not retried.
//!
//! Sampling goes through the [`GpuProbe`] trait so the monitor can be tested without a GPU.

use crate::matrix::GpuTelemetry;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::gpm::{GpmSample, gpm_metrics_get};
use nvml_wrapper::{Device, Nvml};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum GpuError {
    /// NVML could not be loaded or initialised; the string says why.
    #[error("NVML unavailable ({0}): GPU telemetry disabled")]
    Unavailable(String),
    #[error("NVML {call} failed on GPU {index}: {source}")]
    Nvml {
        call: &'static str,
        index: u32,
        #[source]
        source: NvmlError,
    },
    #[error("no GPU indices to read")]
    NoDevices,
    /// Any other probe failure (used by non-NVML probes).
    #[error("GPU probe failed: {0}")]
    Probe(String),
}

/// One reading, averaged over the requested devices.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuReading {
    /// NVML `utilization.gpu`: percent of the last sample period (1/6 s to 1 s, per product) in
    /// which a kernel was running.
    pub utilization_pct: f64,
    pub sm_clock_mhz: f64,
    pub memory_used_bytes: u64,
    pub power_w: f64,
    /// GPM SM activity (`SmUtil`: time each SM had at least one warp assigned), Hopper and later;
    /// `None` where GPM is unsupported and on the first reading (GPM needs two samples).
    pub sm_activity_pct: Option<f64>,
}

/// Something that reads GPU counters.
pub trait GpuProbe: Send {
    /// Names of all devices the probe sees, by index.
    fn device_names(&self) -> Vec<String>;
    /// One reading averaged over the devices `indices`.
    fn read(&mut self, indices: &[u32]) -> Result<GpuReading, GpuError>;
}

/// Libraries tried in order: the versioned name is what driver packages install; the unversioned
/// one (nvml-wrapper's default) usually comes only with development packages.
const NVML_LIBS: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();

fn describe_init_error(lib: &str, e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(_) => format!("{lib} not found"),
        NvmlError::DriverNotLoaded => "NVIDIA driver not loaded".to_string(),
        NvmlError::NoPermission => "no permission to talk to the NVIDIA driver".to_string(),
        other => format!("{lib}: {other}"),
    }
}

/// The process-wide NVML handle, initialised on first use. The error says why NVML is unusable.
pub fn nvml() -> Result<&'static Nvml, GpuError> {
    let init = NVML.get_or_init(|| {
        let mut reasons = Vec::new();
        for lib in NVML_LIBS {
            match Nvml::builder().lib_path(OsStr::new(lib)).init() {
                Ok(nvml) => return Ok(nvml),
                Err(e) => {
                    let loaded = !matches!(e, NvmlError::LibloadingError(_));
                    reasons.push(describe_init_error(lib, &e));
                    // The library loaded but the driver refused: another name will not help.
                    if loaded {
                        return Err(reasons.pop().unwrap_or_default());
                    }
                }
            }
        }
        // Both names missing: report the conventional one.
        Err(reasons.into_iter().next().unwrap_or_default())
    });
    init.as_ref()
        .map_err(|reason| GpuError::Unavailable(reason.clone()))
}

/// Names of the GPUs NVML sees; empty when NVML is unavailable.
pub fn nvml_device_names() -> Vec<String> {
    match nvml() {
        Ok(nvml) => names_of(nvml),
        Err(_) => Vec::new(),
    }
}

/// Each GPU's name, memory and the driver's version, from NVML; empty without NVML.
pub fn nvml_devices() -> Vec<crate::matrix::GpuDevice> {
    let Ok(nvml) = nvml() else {
        return Vec::new();
    };
    let driver = nvml
        .sys_driver_version()
        .unwrap_or_else(|_| "unknown".into());
    let count = nvml.device_count().unwrap_or(0);
    (0..count)
        .map(|i| {
            let d = nvml.device_by_index(i);
            crate::matrix::GpuDevice {
                name: (d.as_ref().ok())
                    .and_then(|d| d.name().ok())
                    .unwrap_or_else(|| format!("GPU {i} (name unavailable)")),
                memory_bytes: (d.as_ref().ok())
                    .and_then(|d| d.memory_info().ok())
                    .map_or(0, |m| m.total),
                driver: driver.clone(),
            }
        })
        .collect()
}

fn names_of(nvml: &Nvml) -> Vec<String> {
    let count = nvml.device_count().unwrap_or(0);
    (0..count)
        .map(|i| {
            nvml.device_by_index(i)
                .and_then(|d| d.name())
                .unwrap_or_else(|_| format!("GPU {i} (name unavailable)"))
        })
        .collect()
}

/// [`GpuProbe`] backed by NVML.
pub struct NvmlProbe {
    nvml: &'static Nvml,
    /// Previous GPM sample per device, for SM activity over the interval between two reads.
    gpm_prev: HashMap<u32, GpmSample<'static>>,
    /// Whether GPM works per device (`false` after the first failure, never retried).
    gpm_ok: HashMap<u32, bool>,
}

/// Opens NVML (once per process) for GPU telemetry. Never panics; on a machine without a GPU or
/// driver the error reads like "NVML unavailable (libnvidia-ml.so.1 not found): GPU telemetry
/// disabled".
pub fn open_nvml() -> Result<NvmlProbe, GpuError> {
    Ok(NvmlProbe {
        nvml: nvml()?,
        gpm_prev: HashMap::new(),
        gpm_ok: HashMap::new(),
    })
}

/// Power and clocks are not supported on every product; report 0 there rather than losing the
/// whole reading.
fn or_zero_if_unsupported(r: Result<u32, NvmlError>) -> Result<u32, NvmlError> {
    match r {
        Err(NvmlError::NotSupported) => Ok(0),
        other => other,
    }
}

impl NvmlProbe {
    fn sm_activity(&mut self, index: u32, device: &Device<'static>) -> Option<f64> {
        let ok = *self
            .gpm_ok
            .entry(index)
            .or_insert_with(|| device.gpm_support().unwrap_or(false));
        if !ok {
            return None;
        }
        let sample = match device.gpm_sample() {
            Ok(s) => s,
            Err(_) => {
                self.gpm_ok.insert(index, false);
                self.gpm_prev.remove(&index);
                return None;
            }
        };
        let prev = self.gpm_prev.insert(index, sample)?;
        let current = self.gpm_prev.get(&index)?;
        let metrics = gpm_metrics_get(self.nvml, &prev, current, &[GpmMetricId::SmUtil]).ok()?;
        match metrics.into_iter().next() {
            Some(Ok(m)) if m.value.is_finite() => Some(m.value),
            _ => None,
        }
    }
}

impl GpuProbe for NvmlProbe {
    fn device_names(&self) -> Vec<String> {
        names_of(self.nvml)
    }

    fn read(&mut self, indices: &[u32]) -> Result<GpuReading, GpuError> {
        if indices.is_empty() {
            return Err(GpuError::NoDevices);
        }
        let mut sum = GpuReading::default();
        let mut memory_used: u128 = 0;
        let mut sm_sum = 0.0;
        let mut sm_n = 0usize;
        for &index in indices {
            let err = |call| {
                move |source| GpuError::Nvml {
                    call,
                    index,
                    source,
                }
            };
            let device = self
                .nvml
                .device_by_index(index)
                .map_err(err("device_by_index"))?;
            let util = device
                .utilization_rates()
                .map_err(err("utilization_rates"))?;
            let clock = or_zero_if_unsupported(device.clock_info(Clock::SM))
                .map_err(err("clock_info(SM)"))?;
            let memory = device.memory_info().map_err(err("memory_info"))?;
            let power_mw =
                or_zero_if_unsupported(device.power_usage()).map_err(err("power_usage"))?;
            sum.utilization_pct += f64::from(util.gpu);
            sum.sm_clock_mhz += f64::from(clock);
            memory_used += u128::from(memory.used);
            sum.power_w += f64::from(power_mw) / 1000.0;
            if let Some(a) = self.sm_activity(index, &device) {
                sm_sum += a;
                sm_n += 1;
            }
        }
        let n = indices.len() as f64;
        Ok(GpuReading {
            utilization_pct: sum.utilization_pct / n,
            sm_clock_mhz: sum.sm_clock_mhz / n,
            memory_used_bytes: (memory_used / indices.len() as u128) as u64,
            power_w: sum.power_w / n,
            // Only when every device reported it, so the average covers the same GPUs.
            sm_activity_pct: (sm_n == indices.len()).then(|| sm_sum / n),
        })
    }
}

/// Running sums over the current averaging window.
#[derive(Debug, Default)]
struct Window {
    samples: u64,
    utilization_pct: f64,
    sm_clock_mhz: f64,
    memory_used_bytes: u128,
    power_w: f64,
    sm_activity_pct: f64,
    sm_activity_samples: u64,
    last_error: Option<String>,
}

impl Window {
    fn add(&mut self, r: &GpuReading) {
        self.samples += 1;
        self.utilization_pct += r.utilization_pct;
        self.sm_clock_mhz += r.sm_clock_mhz;
        self.memory_used_bytes += u128::from(r.memory_used_bytes);
        self.power_w += r.power_w;
        if let Some(a) = r.sm_activity_pct {
            self.sm_activity_pct += a;
            self.sm_activity_samples += 1;
        }
    }

    fn summary(&self) -> Option<GpuTelemetry> {
        if self.samples == 0 {
            return None;
        }
        let n = self.samples as f64;
        Some(GpuTelemetry {
            utilization_pct: self.utilization_pct / n,
            sm_clock_mhz: self.sm_clock_mhz / n,
            memory_used_bytes: (self.memory_used_bytes / u128::from(self.samples)) as u64,
            power_w: self.power_w / n,
            sm_activity_pct: (self.sm_activity_samples > 0)
                .then(|| self.sm_activity_pct / self.sm_activity_samples as f64),
        })
    }
}

struct Shared {
    window: Mutex<Window>,
    stop: Mutex<bool>,
    wake: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Samples GPUs on a background thread and averages the samples of the current window.
///
/// The sweep resets the window when a cell's measurement window starts and reads the summary
/// when it ends. A sample is counted in the window in which its read completes. Sampling stops
/// (and the thread is joined) when the monitor is dropped.
///
/// Where NVML is unavailable, use [`GpuMonitor::disabled`] (or [`GpuMonitor::nvml_or_disabled`]),
/// which has no thread and whose summary is always `None`, so callers need no `Option`.
pub struct GpuMonitor {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    device_names: Vec<String>,
}

impl GpuMonitor {
    /// Starts sampling `indices` through `probe` every `interval` (first sample immediately).
    pub fn start(probe: Box<dyn GpuProbe>, indices: Vec<u32>, interval: Duration) -> GpuMonitor {
        let device_names = probe.device_names();
        let shared = Arc::new(Shared {
            window: Mutex::new(Window::default()),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let worker = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("gpu-monitor".into())
            .spawn(move || sample_loop(probe, &indices, interval, &worker));
        let thread = match spawned {
            Ok(handle) => Some(handle),
            Err(e) => {
                lock(&shared.window).last_error = Some(format!("cannot spawn sampler: {e}"));
                None
            }
        };
        GpuMonitor {
            shared,
            thread,
            device_names,
        }
    }

    /// A monitor that samples nothing: [`Self::window_summary`] is always `None`.
    pub fn disabled() -> GpuMonitor {
        GpuMonitor {
            shared: Arc::new(Shared {
                window: Mutex::new(Window::default()),
                stop: Mutex::new(true),
                wake: Condvar::new(),
            }),
            thread: None,
            device_names: Vec::new(),
        }
    }

    /// NVML monitor of `indices`, or a disabled one with the reason when NVML is unavailable or
    /// there is nothing to monitor.
    pub fn nvml_or_disabled(
        indices: Vec<u32>,
        interval: Duration,
    ) -> (GpuMonitor, Option<GpuError>) {
        if indices.is_empty() {
            return (GpuMonitor::disabled(), Some(GpuError::NoDevices));
        }
        match open_nvml() {
            Ok(probe) => (GpuMonitor::start(Box::new(probe), indices, interval), None),
            Err(e) => (GpuMonitor::disabled(), Some(e)),
        }
    }

    /// Whether a sampling thread is running.
    pub fn is_enabled(&self) -> bool {
        self.thread.is_some()
    }

    /// Device names reported by the probe when the monitor started.
    pub fn device_names(&self) -> &[String] {
        &self.device_names
    }

    /// Starts a new averaging window, discarding the samples so far.
    pub fn reset_window(&self) {
        let mut w = lock(&self.shared.window);
        let last_error = w.last_error.take();
        *w = Window {
            last_error,
            ..Window::default()
        };
    }

    /// Averages of the samples since the last reset; `None` when there are none (disabled
    /// monitor, probe errors, or a window shorter than the interval).
    pub fn window_summary(&self) -> Option<GpuTelemetry> {
        lock(&self.shared.window).summary()
    }

    /// Number of samples in the current window.
    pub fn window_samples(&self) -> u64 {
        lock(&self.shared.window).samples
    }

    /// The probe's most recent error, if any read failed.
    pub fn last_error(&self) -> Option<String> {
        lock(&self.shared.window).last_error.clone()
    }
}

fn sample_loop(mut probe: Box<dyn GpuProbe>, indices: &[u32], interval: Duration, s: &Shared) {
    loop {
        if *lock(&s.stop) {
            return;
        }
        let reading = probe.read(indices);
        {
            let mut w = lock(&s.window);
            match reading {
                Ok(r) => w.add(&r),
                Err(e) => w.last_error = Some(e.to_string()),
            }
        }
        let stop = lock(&s.stop);
        let (stop, _) = s
            .wake
            .wait_timeout_while(stop, interval, |stop| !*stop)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *stop {
            return;
        }
    }
}

impl Drop for GpuMonitor {
    fn drop(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(handle) = self.thread.take() {
            // A panicking probe already lost its samples; nothing more to report.
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    //! The fake probes exist because CI (and this development machine) has no GPU: they let the
    //! monitor's threading and averaging be tested without NVML.

    use super::*;
    use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

    enum Msg {
        Reading(GpuReading),
        Fail,
        /// Returns once the probe is waiting for its next message, i.e. after the previous
        /// message's reading was recorded.
        Barrier,
    }

    /// Fake probe driven by a rendezvous channel, so tests decide exactly which samples happen.
    struct ScriptedProbe {
        rx: Receiver<Msg>,
    }

    impl GpuProbe for ScriptedProbe {
        fn device_names(&self) -> Vec<String> {
            vec!["Fake GPU".into()]
        }
        fn read(&mut self, _indices: &[u32]) -> Result<GpuReading, GpuError> {
            loop {
                match self.rx.recv() {
                    Ok(Msg::Barrier) => continue,
                    Ok(Msg::Reading(r)) => return Ok(r),
                    Ok(Msg::Fail) => return Err(GpuError::Probe("scripted failure".into())),
                    Err(_) => return Err(GpuError::Probe("script ended".into())),
                }
            }
        }
    }

    fn scripted() -> (GpuMonitor, SyncSender<Msg>) {
        let (tx, rx) = sync_channel(0);
        let monitor = GpuMonitor::start(
            Box::new(ScriptedProbe { rx }),
            vec![0],
            Duration::from_millis(1),
        );
        (monitor, tx)
    }

    fn reading(util: f64, mem: u64, sm: Option<f64>) -> GpuReading {
        GpuReading {
            utilization_pct: util,
            sm_clock_mhz: util * 10.0,
            memory_used_bytes: mem,
            power_w: util * 2.0,
            sm_activity_pct: sm,
        }
    }

    fn send(tx: &SyncSender<Msg>, m: Msg) {
        tx.send(m).expect("sampler alive");
    }

    #[test]
    fn fake_gpu_monitor_averages_window() {
        let (monitor, tx) = scripted();
        assert_eq!(monitor.device_names(), ["Fake GPU".to_string()]);
        assert!(monitor.is_enabled());
        send(&tx, Msg::Reading(reading(10.0, 100, Some(40.0))));
        send(&tx, Msg::Reading(reading(30.0, 301, None)));
        send(&tx, Msg::Barrier);
        assert_eq!(monitor.window_samples(), 2);
        let s = monitor.window_summary().expect("samples");
        assert_eq!(s.utilization_pct, 20.0);
        assert_eq!(s.sm_clock_mhz, 200.0);
        assert_eq!(s.power_w, 40.0);
        assert_eq!(s.memory_used_bytes, 200);
        // Averaged over the samples that had it.
        assert_eq!(s.sm_activity_pct, Some(40.0));
        drop(tx);
    }

    #[test]
    fn fake_gpu_reset_discards_earlier_samples() {
        let (monitor, tx) = scripted();
        send(&tx, Msg::Reading(reading(90.0, 1 << 30, Some(90.0))));
        send(&tx, Msg::Barrier);
        assert!(monitor.window_summary().is_some());
        monitor.reset_window();
        assert_eq!(monitor.window_summary(), None);
        send(&tx, Msg::Reading(reading(50.0, 7, None)));
        send(&tx, Msg::Barrier);
        let s = monitor.window_summary().expect("one sample");
        assert_eq!(s.utilization_pct, 50.0);
        assert_eq!(s.memory_used_bytes, 7);
        assert_eq!(s.sm_activity_pct, None);
        drop(tx);
    }

    #[test]
    fn fake_gpu_errors_yield_none() {
        let (monitor, tx) = scripted();
        send(&tx, Msg::Fail);
        send(&tx, Msg::Fail);
        send(&tx, Msg::Barrier);
        assert_eq!(monitor.window_summary(), None);
        let err = monitor.last_error().expect("error recorded");
        assert!(err.contains("scripted failure"), "{err}");
        // Errors mixed with readings: only the readings count.
        send(&tx, Msg::Reading(reading(60.0, 1, None)));
        send(&tx, Msg::Fail);
        send(&tx, Msg::Barrier);
        assert_eq!(
            monitor.window_summary().map(|s| s.utilization_pct),
            Some(60.0)
        );
        drop(tx);
    }

    /// Fake probe that always fails, sampled freely on the real timer.
    struct BrokenProbe;

    impl GpuProbe for BrokenProbe {
        fn device_names(&self) -> Vec<String> {
            Vec::new()
        }
        fn read(&mut self, _: &[u32]) -> Result<GpuReading, GpuError> {
            Err(GpuError::Probe("no device".into()))
        }
    }

    #[test]
    fn fake_gpu_broken_probe_does_not_panic_and_drop_stops() {
        let monitor =
            GpuMonitor::start(Box::new(BrokenProbe), vec![0, 1], Duration::from_millis(2));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(monitor.window_summary(), None);
        assert!(monitor.last_error().is_some());
        // Dropping with a long interval must not wait for the interval.
        let slow = GpuMonitor::start(Box::new(BrokenProbe), vec![0], Duration::from_secs(3600));
        let start = std::time::Instant::now();
        drop(slow);
        drop(monitor);
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn fake_gpu_disabled_monitor_has_no_summary() {
        let m = GpuMonitor::disabled();
        assert!(!m.is_enabled());
        m.reset_window();
        assert_eq!(m.window_summary(), None);
    }

    #[test]
    fn window_average_of_memory_does_not_overflow() {
        let mut w = Window::default();
        w.add(&reading(0.0, u64::MAX, None));
        w.add(&reading(0.0, u64::MAX, None));
        assert_eq!(w.summary().map(|s| s.memory_used_bytes), Some(u64::MAX));
    }

    /// On a machine without NVML (this one, CI) opening fails cleanly; with a GPU it succeeds.
    #[test]
    fn open_nvml_does_not_panic() {
        match open_nvml() {
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.starts_with("NVML unavailable ("), "{msg}");
                assert!(msg.ends_with("GPU telemetry disabled"), "{msg}");
                assert!(nvml_device_names().is_empty());
                let (m, why) = GpuMonitor::nvml_or_disabled(vec![0], Duration::from_millis(10));
                assert!(!m.is_enabled());
                assert!(why.is_some());
            }
            Ok(mut probe) => {
                let names = probe.device_names();
                if !names.is_empty() {
                    let r = probe.read(&[0]).expect("read GPU 0");
                    assert!(r.utilization_pct >= 0.0 && r.memory_used_bytes > 0);
                }
            }
        }
    }

    #[test]
    fn open_nvml_fails_on_this_machine() {
        // This machine has no GPU; skip where one exists (the device machine).
        if std::path::Path::new("/dev/nvidiactl").exists() {
            return;
        }
        assert!(open_nvml().is_err());
    }
}
