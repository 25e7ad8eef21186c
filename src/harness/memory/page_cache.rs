//! What the page cache holds of a dataset, and dropping it, at the scale of millions of files.
//!
//! Each file is asked once: `cachestat(2)` (Linux 6.5+) counts a file's cached and dirty pages
//! in one call; older kernels map the file and ask `mincore(2)`. The files are split over a few
//! threads. Eviction asks first and drops (`posix_fadvise(DONTNEED)`) only files that hold
//! pages, writing back only files with dirty ones, so a cold dataset costs one open and one
//! call per file.
//!
//! Above [`EXACT_FILES`] files, [`cached`] asks a fixed random sample of [`SAMPLE_FILES`]
//! instead and scales the sample's cached share of its pages to the whole dataset (a ratio
//! estimator); [`Cached::half_width_bytes`] states its 95% error. The sample is drawn once per
//! dataset (seeded), so successive readings of one sweep are comparable.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::fs::File;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Datasets of up to this many files are scanned whole.
pub const EXACT_FILES: usize = 100_000;
/// Files a sampled scan asks.
pub const SAMPLE_FILES: usize = 20_000;
/// Threads a scan or an eviction uses at most.
const MAX_THREADS: usize = 8;
/// Seed of the sample (fixed: the same files every reading).
const SAMPLE_SEED: u64 = 0x5eed_ca5e;

/// Bytes of the dataset in the page cache.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cached {
    pub bytes: u64,
    /// 95% half-width of `bytes` when it was estimated from a sample; `None`: every file was
    /// asked.
    pub half_width_bytes: Option<u64>,
    /// Files asked.
    pub files_asked: usize,
}

/// One file's pages: (pages it spans, cached, dirty); `None` where it cannot be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FilePages {
    pages: u64,
    cached: u64,
    dirty: u64,
}

/// The kernel's `struct cachestat_range` and `struct cachestat` (include/uapi/linux/mman.h).
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// `cachestat` is syscall 451 on every architecture that has it.
const SYS_CACHESTAT: libc::c_long = 451;

/// Whether the kernel has `cachestat` (asked once).
fn has_cachestat() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        let Ok(file) = File::open("/proc/self/exe") else {
            return false;
        };
        cachestat(&file).is_some()
    })
}

fn cachestat(file: &File) -> Option<Cachestat> {
    let range = CachestatRange { off: 0, len: 0 };
    let mut stat = Cachestat::default();
    // SAFETY: both pointers are to live, correctly laid out structs; flags must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            std::os::fd::AsRawFd::as_raw_fd(file),
            &range as *const CachestatRange,
            &mut stat as *mut Cachestat,
            0u32,
        )
    };
    (rc == 0).then_some(stat)
}

fn page_size() -> u64 {
    procfs::page_size()
}

/// Asks one open file for its pages.
fn file_pages(file: &File) -> Option<FilePages> {
    let len = file.metadata().ok()?.len();
    let pages = len.div_ceil(page_size());
    if has_cachestat() {
        let s = cachestat(file)?;
        return Some(FilePages {
            pages,
            cached: s.nr_cache.min(pages),
            dirty: s.nr_dirty,
        });
    }
    let cached = crate::harness::memory::file_mapping::FileMapping::new(file)
        .and_then(|m| m.resident_bytes())
        .unwrap_or(0)
        / page_size();
    // mincore cannot tell dirty pages: count every cached one as possibly dirty.
    Some(FilePages {
        pages,
        cached,
        dirty: cached,
    })
}

/// Runs `each` over `items` on up to [`MAX_THREADS`] threads, summing what it returns.
fn in_parallel<'a, T: Sync, R: Send + Default + std::ops::AddAssign>(
    items: &'a [T],
    each: impl Fn(&'a T) -> R + Sync,
) -> R {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS);
    if items.len() < 1000 || threads == 1 {
        let mut total = R::default();
        for item in items {
            total += each(item);
        }
        return total;
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let each = &each;
                s.spawn(move || {
                    let mut total = R::default();
                    for item in part {
                        total += each(item);
                    }
                    total
                })
            })
            .collect();
        let mut total = R::default();
        for h in handles {
            // A worker only sums what the kernel said; it cannot panic but on a bug.
            if let Ok(t) = h.join() {
                total += t;
            }
        }
        total
    })
}

/// Sums of a scan: files asked, their pages and cached pages.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    files: usize,
    pages: u64,
    cached: u64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.files += o.files;
        self.pages += o.pages;
        self.cached += o.cached;
    }
}

/// (pages, cached pages) of each file asked, in the order asked.
#[derive(Default)]
struct PerFile(Vec<(u64, u64)>);

impl std::ops::AddAssign for PerFile {
    fn add_assign(&mut self, mut o: PerFile) {
        self.0.append(&mut o.0);
    }
}

/// The files a sampled scan asks: `k` of `n` indices drawn without replacement, ascending, the
/// same for the same `n` and `k`.
fn sample_indices(n: usize, k: usize) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(SAMPLE_SEED ^ n as u64);
    // Floyd's algorithm: k distinct indices of n without an n-long permutation.
    let k = k.min(n);
    let mut chosen = std::collections::HashSet::with_capacity(k);
    for j in n - k..n {
        let t = (rng.next_u64() % (j as u64 + 1)) as usize;
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    let mut v: Vec<usize> = chosen.into_iter().collect();
    v.sort_unstable();
    v
}

/// Bytes of page cache `paths` hold now, in whole pages; sampled above [`EXACT_FILES`] files
/// (`total_page_bytes`: what the whole dataset spans in pages, [`crate::harness::memory::dataset::DatasetSize`]).
/// Unreadable files count 0.
pub fn cached(paths: &[PathBuf], total_page_bytes: u64) -> Cached {
    cached_with(paths, total_page_bytes, EXACT_FILES, SAMPLE_FILES)
}

/// [`cached`] with its thresholds: whole up to `exact_files`, else `sample_files` asked.
fn cached_with(
    paths: &[PathBuf],
    total_page_bytes: u64,
    exact_files: usize,
    sample_files: usize,
) -> Cached {
    let page = page_size();
    let ask = |p: &PathBuf| -> Tally {
        match File::open(p).ok().and_then(|f| file_pages(&f)) {
            Some(fp) => Tally {
                files: 1,
                pages: fp.pages,
                cached: fp.cached,
            },
            None => Tally {
                files: 1,
                ..Tally::default()
            },
        }
    };
    if paths.len() <= exact_files {
        let t = in_parallel(paths, ask);
        return Cached {
            bytes: t.cached * page,
            half_width_bytes: None,
            files_asked: t.files,
        };
    }
    let sample: Vec<&PathBuf> = sample_indices(paths.len(), sample_files)
        .into_iter()
        .map(|i| &paths[i])
        .collect();
    // Per file (pages, cached): the ratio estimator needs each, not only the sums.
    let PerFile(per_file) = in_parallel(&sample, |p| {
        let t = ask(p);
        PerFile(vec![(t.pages, t.cached)])
    });
    let (bytes, half_width) = ratio_estimate(&per_file, paths.len(), total_page_bytes / page);
    Cached {
        bytes: bytes * page,
        half_width_bytes: Some(half_width * page),
        files_asked: per_file.len(),
    }
}

/// The ratio estimate of the cached pages of `population` files spanning `total_pages`, from
/// a simple random sample of (pages, cached) per file, and its 95% half-width (the usual
/// linearised standard error with the finite-population correction).
fn ratio_estimate(sample: &[(u64, u64)], population: usize, total_pages: u64) -> (u64, u64) {
    let n = sample.len();
    let pages: u64 = sample.iter().map(|s| s.0).sum();
    if n == 0 || pages == 0 {
        return (0, total_pages);
    }
    let cached: u64 = sample.iter().map(|s| s.1).sum();
    let r = cached as f64 / pages as f64;
    let estimate = (r * total_pages as f64)
        .round()
        .clamp(0.0, total_pages as f64);
    if n < 2 {
        return (estimate as u64, total_pages);
    }
    let mean_pages = pages as f64 / n as f64;
    let residual_var = sample
        .iter()
        .map(|&(p, c)| (c as f64 - r * p as f64).powi(2))
        .sum::<f64>()
        / (n - 1) as f64;
    let fpc = (1.0 - n as f64 / population.max(n) as f64).max(0.0);
    let se_r = (fpc * residual_var / n as f64).sqrt() / mean_pages;
    let half = (1.96 * se_r * total_pages as f64).ceil();
    (estimate as u64, half.min(total_pages as f64) as u64)
}

/// Drops the dataset's clean pages from the page cache (every file, however many). The memory
/// cgroup charges a cached page to whoever first read it, so without this a dataset cached by
/// an earlier run (or by its generator) would not count against the job's memory cap and a cap
/// could not shrink its cache. Files holding no page are only asked; dirty ones (a dataset just
/// generated) are written back first, since dirty pages cannot be dropped. The files dropped
/// are asked again at the end: pages still in a CPU's batch of recently added pages escape a
/// first drop (measured: 6% of a freshly written dataset of a million files).
///
/// Returns the files it asked the kernel to drop.
pub fn evict(paths: &[PathBuf]) -> usize {
    let dropped = in_parallel(paths, |path| match drop_pages(path) {
        true => Dropped(vec![path]),
        false => Dropped(Vec::new()),
    });
    let n = dropped.0.len();
    in_parallel(&dropped.0, |path| usize::from(drop_pages(path)));
    n
}

/// Drops one file's pages where it holds any; whether it did.
fn drop_pages(path: &PathBuf) -> bool {
    use nix::fcntl::{PosixFadviseAdvice, posix_fadvise};
    let Ok(file) = File::open(path) else {
        return false;
    };
    let pages = file_pages(&file);
    if pages.is_some_and(|p| p.cached == 0) {
        return false;
    }
    if pages.is_none_or(|p| p.dirty > 0) {
        let _ = file.sync_data();
    }
    let _ = posix_fadvise(&file, 0, 0, PosixFadviseAdvice::POSIX_FADV_DONTNEED);
    true
}

/// Files dropped by a pass.
#[derive(Default)]
struct Dropped<'a>(Vec<&'a PathBuf>);

impl std::ops::AddAssign for Dropped<'_> {
    fn add_assign(&mut self, mut o: Self) {
        self.0.append(&mut o.0);
    }
}

#[cfg(test)]
mod tests;
