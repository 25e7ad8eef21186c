//! What storage delivers to readers that each read one sample at a time at random offsets.
//! Disks whose small random reads are slow (network block devices, HDDs) deliver far less of
//! them than of the sequential reads [`super::bandwidth::measure_storage_read_bandwidth`] makes, and less
//! than a cap a spec sets to emulate slower storage: a job reading small samples at random
//! then runs at the disk's speed, not the cap's.

use super::bandwidth::BandwidthError;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Direct I/O moves whole logical blocks from aligned buffers; 4 KiB serves every common disk.
const BLOCK: u64 = 4096;
/// The largest read the probe makes: beyond it a read is no longer small.
const MAX_READ: u64 = 1 << 20;

/// What [`measure_random_read_bandwidth`] read and how long it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomReads {
    pub bytes: u64,
    pub seconds: f64,
}

impl RandomReads {
    pub fn bytes_per_s(&self) -> f64 {
        self.bytes as f64 / self.seconds.max(1e-9)
    }
}

/// `readers` threads each read `read_bytes` (rounded up to whole 4 KiB blocks, at most 1 MiB)
/// at a random block of a random file of `files`, one read at a time, for `duration`. The
/// reads bypass the page cache (`O_DIRECT`), so what is cached neither serves them nor is
/// evicted by them; a file system without direct I/O (tmpfs) is an error, not a figure.
pub fn measure_random_read_bandwidth(
    files: &[PathBuf],
    read_bytes: u64,
    readers: usize,
    duration: Duration,
) -> Result<RandomReads, BandwidthError> {
    if files.is_empty() {
        return Err(BandwidthError::NoFiles);
    }
    let len = read_bytes.div_ceil(BLOCK).clamp(1, MAX_READ / BLOCK) * BLOCK;
    let start = Instant::now();
    let deadline = start + duration;
    let per_reader: Vec<Result<u64, BandwidthError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..readers.max(1) as u64)
            .map(|seed| scope.spawn(move || read_at_random(files, len, seed, deadline)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Ok(0)))
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let mut bytes = 0;
    for r in per_reader {
        bytes += r?;
    }
    if bytes == 0 {
        return Err(BandwidthError::NothingRead);
    }
    Ok(RandomReads { bytes, seconds })
}

/// One reader's loop: bytes read until `deadline`.
fn read_at_random(
    files: &[PathBuf],
    len: u64,
    seed: u64,
    deadline: Instant,
) -> Result<u64, BandwidthError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BandwidthError::Io { path, source }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // An aligned window of a larger buffer: direct I/O needs the memory aligned too.
    let mut raw = vec![0u8; (len + BLOCK) as usize];
    let skip = raw.as_ptr().align_offset(BLOCK as usize);
    let buf = &mut raw[skip..skip + len as usize];
    // The file last opened, kept for the next read: a one-file dataset is opened once.
    let mut open: Option<(usize, File, u64)> = None;
    let mut total = 0;
    while Instant::now() < deadline {
        let index = (rng.next_u64() % files.len() as u64) as usize;
        if open.as_ref().is_none_or(|(i, _, _)| *i != index) {
            let path = &files[index];
            let file = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(path)
                .map_err(io_err(path))?;
            let size = file.metadata().map_err(io_err(path))?.len();
            open = Some((index, file, size));
        }
        let Some((_, file, size)) = open.as_ref() else {
            continue;
        };
        let blocks = size.saturating_sub(len) / BLOCK;
        let offset = rng.next_u64() % (blocks + 1) * BLOCK;
        match file.read_at(buf, offset) {
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err(&files[index])(e)),
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Bytes this process has caused to be fetched from storage, its threads included.
    fn process_storage_reads() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/self/io").ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("read_bytes:"))
            .and_then(|v| v.trim().parse().ok())
    }

    /// A file just written is wholly in the page cache: reads through the cache would fetch
    /// nothing from storage. The probe's bytes all come from storage.
    #[test]
    fn random_reads_come_from_storage_not_the_page_cache() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data.bin");
        let mut f = File::create(&path).expect("create");
        for i in 0..16u8 {
            f.write_all(&[i; 1 << 20]).expect("write");
        }
        f.sync_all().expect("sync");
        let before = process_storage_reads();
        let reads = match measure_random_read_bandwidth(
            std::slice::from_ref(&path),
            3 << 10,
            2,
            Duration::from_millis(300),
        ) {
            Ok(r) => r,
            Err(BandwidthError::Io { source, .. })
                if source.raw_os_error() == Some(libc::EINVAL) =>
            {
                eprintln!("SKIPPED: this file system has no direct I/O: {source}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert!(
            reads.bytes >= BLOCK && reads.bytes % BLOCK == 0,
            "{reads:?}"
        );
        assert!(reads.bytes_per_s().is_finite(), "{reads:?}");
        if let (Some(before), Some(after)) = (before, process_storage_reads()) {
            let fetched = after - before;
            assert!(
                fetched >= reads.bytes * 9 / 10,
                "{fetched} bytes fetched from storage for {reads:?}"
            );
        }
    }

    #[test]
    fn no_files_is_an_error() {
        let r = measure_random_read_bandwidth(&[], 4096, 1, Duration::from_millis(1));
        assert!(matches!(r, Err(BandwidthError::NoFiles)), "{r:?}");
    }
}
