//! The job's dataset: generated when missing (if the spec says how), and measured (bytes,
//! samples = files) when the spec does not say.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error(
        "dataset {0} does not exist and the spec has no [dataset] generate command to create it"
    )]
    Missing(PathBuf),
    #[error("dataset generator {argv:?} failed: {message}")]
    Generate { argv: Vec<String>, message: String },
    #[error("cannot read dataset {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Size of a dataset on disk.
#[derive(Debug, Clone, Default)]
pub struct DatasetSize {
    pub bytes: u64,
    /// What the whole dataset takes in the page cache: each file rounded up to whole pages
    /// (an ImageFolder of 40 KB JPEGs takes 5% more than its size).
    pub page_cache_bytes: u64,
    pub files: u64,
    /// Every regular file, so its storage bandwidth can be measured and its cache evicted.
    pub paths: Vec<PathBuf>,
}

/// Runs the generator (argv already templated, no shell) when `path` is missing.
pub fn ensure_dataset(
    path: &Path,
    generate: Option<&[String]>,
    cwd: &Path,
) -> Result<(), DatasetError> {
    if path.exists() {
        return Ok(());
    }
    let argv = generate.ok_or_else(|| DatasetError::Missing(path.to_owned()))?;
    let gen_err = |message: String| DatasetError::Generate {
        argv: argv.to_vec(),
        message,
    };
    let program = argv
        .first()
        .ok_or_else(|| gen_err("empty command".into()))?;
    let out = Command::new(program)
        .args(&argv[1..])
        .env("PATH", crate::harness::process::launch::path_with_own_dir())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| gen_err(e.to_string()))?;
    if !out.success() {
        return Err(gen_err(crate::harness::process::launch::describe_exit(out)));
    }
    if !path.exists() {
        return Err(gen_err(format!(
            "it succeeded but {} still does not exist",
            path.display()
        )));
    }
    Ok(())
}

/// Walks `path` (a file or a directory tree; symlinks are not followed; names starting with a
/// dot are skipped).
pub fn measure_dataset(path: &Path) -> Result<DatasetSize, DatasetError> {
    let read_err = |p: &Path| {
        let p = p.to_owned();
        move |source| DatasetError::Read { path: p, source }
    };
    let mut size = DatasetSize::default();
    let page = procfs::page_size();
    let mut stack = vec![path.to_owned()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).map_err(read_err(&p))?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&p).map_err(read_err(&p))? {
                let entry = entry.map_err(read_err(&p))?;
                // Hidden names (a generator's `.complete` marker, `.cache/`) are not samples.
                if !entry.file_name().as_encoded_bytes().starts_with(b".") {
                    stack.push(entry.path());
                }
            }
        } else if meta.is_file() {
            size.bytes += meta.len();
            size.page_cache_bytes += meta.len().div_ceil(page) * page;
            size.files += 1;
            size.paths.push(p);
        }
    }
    size.paths.sort();
    Ok(size)
}

impl DatasetSize {
    /// Bytes of the dataset in the page cache now ([`crate::harness::memory::page_cache::cached`]: every file
    /// asked, or a sample of a dataset of millions).
    pub fn cached(&self) -> crate::harness::memory::page_cache::Cached {
        crate::harness::memory::page_cache::cached(&self.paths, self.page_cache_bytes)
    }

    /// Drops the dataset from the page cache ([`crate::harness::memory::page_cache::evict`]).
    pub fn evict(&self) {
        crate::harness::memory::page_cache::evict(&self.paths);
    }
}

/// The whole-disk block device (`major`, `minor`) holding `path`: throttles apply to disks, so a
/// partition is mapped to its parent. `None` for files not on a block device (tmpfs, overlay).
pub fn block_device_of(path: &Path) -> Option<(u64, u64)> {
    let dev = nix::sys::stat::stat(path).ok()?.st_dev;
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if !sys.exists() {
        return None;
    }
    if sys.join("partition").exists() {
        let parent = std::fs::read_to_string(sys.join("../dev")).ok()?;
        let (a, b) = parent.trim().split_once(':')?;
        return Some((a.parse().ok()?, b.parse().ok()?));
    }
    Some((major, minor))
}

/// The read-ahead window of the block device holding `path` (its `read_ahead_kb`), bytes: what
/// the kernel reads around a page fault on a memory map of a file there.
pub fn read_ahead_bytes(path: &Path) -> Option<u64> {
    let (major, minor) = block_device_of(path)?;
    let kb = std::fs::read_to_string(format!(
        "/sys/dev/block/{major}:{minor}/queue/read_ahead_kb"
    ))
    .ok()?;
    kb.trim()
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
        .filter(|b| *b > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_bytes_follow_reads_and_eviction() {
        // On the disk of the build tree: a tmpfs (/tmp) keeps every page whatever fadvise says.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let path = dir.path().join("sample.bin");
        let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i * 7 + 3) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let files = vec![path.clone(), dir.path().join("missing")];
        let cached_bytes =
            |files: &[PathBuf]| crate::harness::memory::page_cache::cached(files, 0).bytes;
        crate::harness::memory::page_cache::evict(&files);
        let on_disk = block_device_of(&path).is_some();
        if on_disk {
            assert!(
                cached_bytes(&files) < data.len() as u64 / 4,
                "evicted: {}",
                cached_bytes(&files)
            );
        }
        let _ = std::fs::read(&path).unwrap();
        assert_eq!(cached_bytes(&files), data.len() as u64, "read back in full");
        // A file's last page is held whole.
        let odd = dir.path().join("odd.bin");
        std::fs::write(&odd, [1u8; 5000]).unwrap();
        let _ = std::fs::read(&odd).unwrap();
        let page = procfs::page_size();
        assert_eq!(
            cached_bytes(std::slice::from_ref(&odd)),
            5000u64.div_ceil(page) * page
        );
        let size = measure_dataset(dir.path()).unwrap();
        assert_eq!(size.bytes, data.len() as u64 + 5000);
        assert_eq!(
            size.page_cache_bytes,
            data.len() as u64 + 5000u64.div_ceil(page) * page
        );
        assert_eq!(cached_bytes(&[]), 0);
    }
}
