//! `input-pipeline train`: worker threads read, decode, augment and tensorise
//! samples; a consumer emulating an accelerator takes one batch per
//! `--step-ms`.
//!
//! Data flow: a shared sampler hands out batches of file indices (a fresh
//! seeded shuffle per epoch); each worker builds a whole batch (like a
//! PyTorch DataLoader worker) and sends it over a bounded channel of
//! `prefetch * workers` batches; the consumer receives a batch, records
//! progress and sleeps for the rest of the step time.
//!
//! With `--batch-file`, the batch size can change while it runs: the consumer
//! looks at the file at every iteration and, when it changed, hands the new
//! size to the workers for the batches they build next (an elastic scheduler
//! changing a job's batch size at iteration boundaries, as ONES does).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use image::imageops::{self, FilterType};
use image::{ImageBuffer, Rgb, RgbImage};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use crate::report::Reporter;
use crate::{COMPLETE_MARKER, dataset_files, generate_hint, mix_seed};

/// ImageNet normalisation, as torchvision's `Normalize`.
const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

#[derive(Args, Debug, Clone)]
pub struct TrainArgs {
    /// Dataset directory written by `input-pipeline generate`.
    #[arg(long)]
    pub data: PathBuf,
    /// Data-loading worker threads (default: CPUs available to the process).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: Option<u32>,
    /// Samples per batch (per iteration).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub batch: u32,
    /// Emulated accelerator step time per batch, in milliseconds (0: none,
    /// the job is purely input-bound).
    #[arg(long, default_value_t = 20.0)]
    pub step_ms: f64,
    /// Side of the square random crop fed to the "model".
    #[arg(long, default_value_t = 224, value_parser = clap::value_parser!(u32).range(8..=4096))]
    pub crop: u32,
    /// Batches prefetched per worker (bounded channel depth).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub prefetch: u32,
    /// Stop after this many seconds.
    #[arg(long)]
    pub max_seconds: Option<f64>,
    /// Stop after this many iterations.
    #[arg(long)]
    pub max_iterations: Option<u64>,
    /// Seed of the per-epoch shuffle and of the augmentations.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Read the files in the same order every epoch (a loader without shuffling, or tar
    /// shards split between persistent workers) instead of a fresh shuffle.
    #[arg(long)]
    pub in_order: bool,
    /// Take the batch size from this file while running: one line, `N` or `batch=N`, read
    /// again whenever the file changes. Until it exists, --batch. The accelerator's step
    /// stays --step-ms whatever the size: a larger batch is more samples a step.
    #[arg(long)]
    pub batch_file: Option<PathBuf>,
}

/// Most samples a batch may hold.
const MAX_BATCH: usize = 65_536;

/// The batch size a `--batch-file` holds: `N` or `batch=N` on its first line.
fn parse_batch(text: &str) -> Result<usize> {
    let line = text.lines().next().unwrap_or("").trim();
    let value = line.strip_prefix("batch=").unwrap_or(line).trim();
    value
        .parse::<usize>()
        .ok()
        .filter(|b| (1..=MAX_BATCH).contains(b))
        .ok_or_else(|| {
            anyhow!("{line:?}: expected a batch size from 1 to {MAX_BATCH}, as `N` or `batch=N`")
        })
}

/// The `--batch-file` and what was last read from it.
struct BatchControl {
    path: PathBuf,
    seen: Option<std::time::SystemTime>,
}

impl BatchControl {
    /// The new batch size where the file changed since the last look and holds one; a file
    /// that cannot be read or parsed is warned about once a change, and the size kept.
    fn changed(&mut self) -> Option<usize> {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok()?;
        if self.seen == Some(modified) {
            return None;
        }
        self.seen = Some(modified);
        let read = std::fs::read_to_string(&self.path)
            .map_err(anyhow::Error::from)
            .and_then(|t| parse_batch(&t));
        match read {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!(
                    "input-pipeline train: warning: {}: {e:#}; keeping the batch size",
                    self.path.display()
                );
                None
            }
        }
    }
}

/// One batch as the accelerator would receive it: `samples` CHW f32 images.
struct Batch {
    data: Vec<f32>,
    samples: u64,
}

enum Msg {
    Batch(Batch),
    Fatal(String),
}

/// Hands out file indices, reshuffling at every epoch boundary (or in file order every epoch).
pub struct Sampler {
    n: usize,
    seed: u64,
    shuffle: bool,
    epoch: u64,
    pos: usize,
    order: Vec<u32>,
}

impl Sampler {
    pub fn new(n: usize, seed: u64, shuffle: bool) -> Self {
        assert!(n > 0);
        Sampler {
            n,
            seed,
            shuffle,
            epoch: 0,
            pos: 0,
            order: Self::order(n, seed, shuffle, 0),
        }
    }

    fn order(n: usize, seed: u64, shuffle: bool, epoch: u64) -> Vec<u32> {
        match shuffle {
            true => epoch_order(n, seed, epoch),
            false => (0..n as u32).collect(),
        }
    }

    /// The next `k` indices (an epoch boundary may fall inside a batch).
    pub fn next_batch(&mut self, k: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(k);
        while out.len() < k {
            if self.pos == self.n {
                self.epoch += 1;
                self.pos = 0;
                self.order = Self::order(self.n, self.seed, self.shuffle, self.epoch);
            }
            let take = (k - out.len()).min(self.n - self.pos);
            out.extend_from_slice(&self.order[self.pos..self.pos + take]);
            self.pos += take;
        }
        out
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }
}

/// Seeded Fisher-Yates permutation of `0..n` for one epoch.
pub fn epoch_order(n: usize, seed: u64, epoch: u64) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix_seed(seed, epoch ^ 0x5348_5546_464c_4521));
    let mut v: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// torchvision-style RandomResizedCrop window (scale 0.08-1, ratio 3/4-4/3):
/// returns (x, y, w, h) inside a `width` x `height` image.
pub fn random_resized_crop(rng: &mut ChaCha8Rng, width: u32, height: u32) -> (u32, u32, u32, u32) {
    let area = f64::from(width) * f64::from(height);
    let (lo, hi) = ((3.0f64 / 4.0).ln(), (4.0f64 / 3.0).ln());
    for _ in 0..10 {
        let target = area * (0.08 + unit(rng) * 0.92);
        let ratio = (lo + unit(rng) * (hi - lo)).exp();
        let w = (target * ratio).sqrt().round() as u32;
        let h = (target / ratio).sqrt().round() as u32;
        if w > 0 && h > 0 && w <= width && h <= height {
            let x = (unit(rng) * f64::from(width - w + 1)) as u32;
            let y = (unit(rng) * f64::from(height - h + 1)) as u32;
            return (x.min(width - w), y.min(height - h), w, h);
        }
    }
    let side = width.min(height);
    ((width - side) / 2, (height - side) / 2, side, side)
}

/// Read, decode, random-resized-crop, flip and normalise one sample,
/// appending `3 * crop * crop` CHW floats to `out`.
fn load_sample(path: &PathBuf, crop: u32, rng: &mut ChaCha8Rng, out: &mut Vec<f32>) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let img = image::load_from_memory(&bytes)
        .with_context(|| format!("cannot decode {}", path.display()))?
        .into_rgb8();
    let (x, y, w, h) = random_resized_crop(rng, img.width(), img.height());
    let window: RgbImage = imageops::crop_imm(&img, x, y, w, h).to_image();
    let mut resized: ImageBuffer<Rgb<u8>, Vec<u8>> =
        imageops::resize(&window, crop, crop, FilterType::Triangle);
    if rng.next_u32() & 1 == 1 {
        imageops::flip_horizontal_in_place(&mut resized);
    }
    let plane = (crop * crop) as usize;
    let start = out.len();
    out.resize(start + 3 * plane, 0.0);
    let dst = &mut out[start..];
    for (i, px) in resized.pixels().enumerate() {
        for c in 0..3 {
            dst[c * plane + i] = (f32::from(px.0[c]) / 255.0 - MEAN[c]) / STD[c];
        }
    }
    Ok(())
}

struct Shared {
    files: Vec<PathBuf>,
    sampler: Mutex<Sampler>,
    stop: Arc<AtomicBool>,
    errors: AtomicU64,
    loaded: AtomicU64,
    /// The size of the batches built next.
    batch: AtomicUsize,
    crop: u32,
    seed: u64,
}

fn worker(id: u64, shared: Arc<Shared>, tx: SyncSender<Msg>) {
    let mut rng = ChaCha8Rng::seed_from_u64(mix_seed(shared.seed ^ 0x574f_524b, id));
    let per_sample = 3 * (shared.crop as usize) * (shared.crop as usize);
    while !shared.stop.load(Ordering::Relaxed) {
        let batch = shared.batch.load(Ordering::Relaxed);
        let indices = match shared.sampler.lock() {
            Ok(mut s) => s.next_batch(batch),
            Err(_) => return,
        };
        let mut data = Vec::with_capacity(batch * per_sample);
        let mut samples = 0;
        for i in indices {
            if shared.stop.load(Ordering::Relaxed) {
                return;
            }
            let path = &shared.files[i as usize];
            match load_sample(path, shared.crop, &mut rng, &mut data) {
                Ok(()) => {
                    samples += 1;
                    shared.loaded.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    let n = shared.errors.fetch_add(1, Ordering::Relaxed) + 1;
                    if n <= 10 {
                        eprintln!("input-pipeline train: warning: skipping sample: {e:#}");
                    }
                    if n >= 100 && shared.loaded.load(Ordering::Relaxed) == 0 {
                        let _ = tx.send(Msg::Fatal(format!(
                            "{n} samples failed and none loaded (last: {e:#})"
                        )));
                        return;
                    }
                }
            }
        }
        if samples == 0 {
            continue;
        }
        if tx.send(Msg::Batch(Batch { data, samples })).is_err() {
            return; // consumer gone
        }
    }
}

fn install_signal_handlers(stop: &Arc<AtomicBool>) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGTERM, SIGINT] {
        // A second signal while stopping exits at once.
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(stop))?;
        signal_hook::flag::register(sig, Arc::clone(stop))?;
    }
    Ok(())
}

/// Validate the dataset directory and list its samples.
fn open_dataset(dir: &std::path::Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        bail!(
            "dataset directory {} does not exist; {}",
            dir.display(),
            generate_hint(dir)
        );
    }
    let files = dataset_files(dir)?;
    if files.is_empty() {
        bail!(
            "no .jpg/.jpeg/.png samples in {} (nor in its sub-directories); {}",
            dir.display(),
            generate_hint(dir)
        );
    }
    if !dir.join(COMPLETE_MARKER).is_file() {
        eprintln!(
            "input-pipeline train: warning: {} has no {COMPLETE_MARKER} marker (interrupted or foreign dataset?); \
             if it came from `input-pipeline generate`, rerun it to finish the dataset",
            dir.display()
        );
    }
    Ok(files)
}

pub fn run(args: &TrainArgs) -> Result<()> {
    if !(args.step_ms.is_finite() && args.step_ms >= 0.0) {
        bail!("--step-ms must be a non-negative number");
    }
    if let Some(s) = args.max_seconds
        && !(s.is_finite() && s >= 0.0)
    {
        bail!("--max-seconds must be a non-negative number");
    }
    let files = open_dataset(&args.data)?;
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let workers = args.workers.map(|w| w as usize).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let mut reporter = Reporter::from_env()?;
    let stop = Arc::new(AtomicBool::new(false));
    install_signal_handlers(&stop).context("cannot install signal handlers")?;

    let step = Duration::from_secs_f64(args.step_ms / 1000.0);
    let ceiling = if args.step_ms > 0.0 {
        format!(
            "{:.1} samples/s",
            f64::from(args.batch) * 1000.0 / args.step_ms
        )
    } else {
        "none".to_string()
    };
    eprintln!(
        "input-pipeline train: {} samples ({:.1} MB) in {}; {workers} workers, batch {}, crop {}, \
         step {} ms (ceiling {ceiling}), prefetch {} batches/worker",
        files.len(),
        bytes as f64 / 1e6,
        args.data.display(),
        args.batch,
        args.crop,
        args.step_ms,
        args.prefetch,
    );

    let n_files = files.len();
    let shared = Arc::new(Shared {
        files,
        sampler: Mutex::new(Sampler::new(n_files, args.seed, !args.in_order)),
        stop: Arc::clone(&stop),
        errors: AtomicU64::new(0),
        loaded: AtomicU64::new(0),
        batch: AtomicUsize::new(args.batch as usize),
        crop: args.crop,
        seed: args.seed,
    });
    let (tx, rx) = sync_channel::<Msg>(workers * args.prefetch as usize);
    for id in 0..workers {
        let shared = Arc::clone(&shared);
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("loader-{id}"))
            .spawn(move || worker(id as u64, shared, tx))
            .context("cannot spawn worker thread")?;
    }
    drop(tx);

    let started = Instant::now();
    let deadline = args
        .max_seconds
        .map(|s| started + Duration::from_secs_f64(s));
    let mut control = (args.batch_file.clone()).map(|path| BatchControl { path, seen: None });
    let outcome = consume(
        args,
        (&rx, &shared.batch, control.as_mut()),
        &stop,
        deadline,
        step,
        &mut reporter,
    );
    stop.store(true, Ordering::SeqCst);
    drop(rx);

    let elapsed = started.elapsed().as_secs_f64();
    let epoch = shared.sampler.lock().map(|s| s.epoch()).unwrap_or(0);
    eprintln!(
        "input-pipeline train: {} after {:.1} s: {} iterations, {} samples ({:.1} samples/s mean), \
         epoch {}, {} sample errors",
        match &outcome {
            Ok(Stop::Signal) => "stopped by signal",
            Ok(Stop::Limit) => "done",
            Err(_) => "failed",
        },
        elapsed,
        reporter.iterations(),
        reporter.samples(),
        reporter.samples() as f64 / elapsed.max(1e-9),
        epoch,
        shared.errors.load(Ordering::Relaxed),
    );
    outcome.map(|_| ())
}

enum Stop {
    Signal,
    Limit,
}

fn consume(
    args: &TrainArgs,
    (rx, batch_size, mut control): (&Receiver<Msg>, &AtomicUsize, Option<&mut BatchControl>),
    stop: &AtomicBool,
    deadline: Option<Instant>,
    step: Duration,
    reporter: &mut Reporter,
) -> Result<Stop> {
    let poll = Duration::from_millis(50);
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(Stop::Signal);
        }
        if args
            .max_iterations
            .is_some_and(|m| reporter.iterations() >= m)
            || deadline.is_some_and(|d| Instant::now() >= d)
        {
            return Ok(Stop::Limit);
        }
        if let Some(b) = control.as_deref_mut().and_then(BatchControl::changed)
            && batch_size.swap(b, Ordering::Relaxed) != b
        {
            eprintln!("input-pipeline train: batch {b} from the next batches built");
        }
        let t0 = Instant::now();
        let batch = loop {
            match rx.recv_timeout(poll) {
                Ok(Msg::Batch(b)) => break b,
                Ok(Msg::Fatal(e)) => return Err(anyhow!("input pipeline failed: {e}")),
                Err(RecvTimeoutError::Timeout) => {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(Stop::Signal);
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(Stop::Limit);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    // Workers also leave when they see the stop flag.
                    if stop.load(Ordering::SeqCst) {
                        return Ok(Stop::Signal);
                    }
                    return Err(anyhow!("all input-pipeline workers exited"));
                }
            }
        };
        // "Run the model": the accelerator owns the batch for the step.
        debug_assert_eq!(
            batch.data.len() as u64,
            batch.samples * 3 * u64::from(args.crop) * u64::from(args.crop)
        );
        let n = batch.samples;
        drop(batch);
        reporter.step(n)?;
        let end = t0 + step;
        // Sleep the rest of the step in slices so a signal stops us promptly.
        loop {
            let now = Instant::now();
            if now >= end || stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep((end - now).min(poll));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_orders_are_permutations_and_seeded() {
        let a = epoch_order(100, 1, 0);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<u32>>());
        assert_eq!(a, epoch_order(100, 1, 0));
        assert_ne!(a, epoch_order(100, 1, 1));
        assert_ne!(a, epoch_order(100, 2, 0));
    }

    #[test]
    fn sampler_covers_each_epoch_exactly_once() {
        let mut s = Sampler::new(10, 7, true);
        let mut seen = Vec::new();
        for _ in 0..5 {
            seen.extend(s.next_batch(4)); // 20 indices = 2 epochs
        }
        assert_eq!(s.epoch(), 1);
        for epoch in seen.chunks(10) {
            let mut e = epoch.to_vec();
            e.sort();
            assert_eq!(e, (0..10).collect::<Vec<u32>>());
        }
        let mut in_order = Sampler::new(10, 7, false);
        let two: Vec<u32> = (0..5).flat_map(|_| in_order.next_batch(4)).collect();
        assert_eq!(two, (0..10).chain(0..10).collect::<Vec<u32>>());
    }

    #[test]
    fn batch_files_hold_a_size_or_say_what_they_expect() {
        assert_eq!(parse_batch("64\n").unwrap(), 64);
        assert_eq!(parse_batch("batch=8").unwrap(), 8);
        assert_eq!(parse_batch(" batch= 16 \nignored").unwrap(), 16);
        for bad in ["", "0", "-1", "batch=", "65537", "eight", "batch=1.5"] {
            let e = parse_batch(bad).unwrap_err().to_string();
            assert!(e.contains("expected a batch size"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_batch_file_is_read_again_when_it_changes() {
        let dir = std::env::temp_dir().join(format!("input-pipeline-batch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("batch");
        let mut control = BatchControl {
            path: path.clone(),
            seen: None,
        };
        assert_eq!(control.changed(), None, "no file yet: --batch stands");
        std::fs::write(&path, "8\n").unwrap();
        assert_eq!(control.changed(), Some(8));
        assert_eq!(control.changed(), None, "unchanged: not read again");
        // Rewritten within the file system's time resolution: a later time stamp marks it.
        let rewrite = |text: &str, seconds: u64| {
            std::fs::write(&path, text).unwrap();
            let at = std::time::SystemTime::now() + Duration::from_secs(seconds);
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(at).unwrap();
        };
        rewrite("batch=32\n", 5);
        assert_eq!(control.changed(), Some(32));
        rewrite("many\n", 10);
        assert_eq!(control.changed(), None, "unreadable: the size is kept");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn crops_stay_inside_the_image() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..1000 {
            let (x, y, w, h) = random_resized_crop(&mut rng, 256, 200);
            assert!(w > 0 && h > 0 && x + w <= 256 && y + h <= 200);
        }
    }

    #[test]
    fn missing_or_empty_dataset_says_generate_first() {
        let dir = std::env::temp_dir().join(format!("input-pipeline-empty-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let err = open_dataset(&dir).unwrap_err().to_string();
        assert!(err.contains("input-pipeline generate --dir"), "{err}");
        std::fs::create_dir_all(&dir).unwrap();
        let err = open_dataset(&dir).unwrap_err().to_string();
        assert!(err.contains("input-pipeline generate --dir"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn load_sample_produces_normalised_chw_tensor() {
        let dir = std::env::temp_dir().join(format!("input-pipeline-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gen_args = crate::generate::GenerateArgs {
            dir: dir.clone(),
            samples: 1,
            width: 96,
            height: 80,
            seed: 1,
            format: crate::generate::Format::Jpeg,
            classes: 1,
            threads: Some(1),
        };
        let path = dir.join("a.jpg");
        std::fs::write(&path, crate::generate::synth_image(&gen_args, 0).unwrap()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut out = Vec::new();
        load_sample(&path, 32, &mut rng, &mut out).unwrap();
        load_sample(&path, 32, &mut rng, &mut out).unwrap();
        assert_eq!(out.len(), 2 * 3 * 32 * 32);
        assert!(
            out.iter()
                .all(|v| v.is_finite() && (-2.2..=2.7).contains(v))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
