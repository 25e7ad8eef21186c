//! Resident memory of a job's process tree.
//!
//! Summing each process's RSS over-counts a multi-process job: a PyTorch DataLoader forks its
//! workers, which share most of their pages (the interpreter, libtorch) with the main process,
//! so the RSS sum of a 2-worker ResNet job is ~1.6x its real footprint (1.84 GB vs 1.16 GB,
//! measured). The sum of PSS (proportional set size: each shared page split between its
//! sharers) counts every resident page once, which is what a memory limit has to hold.

/// Resident bytes of `pids` together, each page counted once (sum of PSS). Falls back to the
/// RSS of a process whose `smaps_rollup` cannot be read (kernels before 4.14); processes that
/// are gone count 0.
pub fn tree_resident_bytes(pids: &[u32]) -> u64 {
    pids.iter().map(|&pid| process_resident_bytes(pid)).sum()
}

/// The most of one core [`ResidentSampler`] lets the reading of `smaps_rollup` take.
const SAMPLER_DUTY: f64 = 0.01;

/// Samples the peak of [`tree_resident_bytes`] no more often than keeps its cost under
/// [`SAMPLER_DUTY`] of a core. Reading `smaps_rollup` walks a process's page tables: 6-15 ms
/// of CPU for each process of a four-worker PyTorch DataLoader, so the profiler polling a tree
/// of five ten times a second took 15-20% of a core from the machine it was measuring.
#[derive(Debug, Default)]
pub struct ResidentSampler {
    next: Option<std::time::Instant>,
}

impl ResidentSampler {
    /// `read()` (the tree's resident bytes) where the last read's cost allows another by now,
    /// else `None`. The first call always reads.
    pub fn sample(&mut self, read: impl FnOnce() -> u64) -> Option<u64> {
        let start = std::time::Instant::now();
        if self.next.is_some_and(|next| start < next) {
            return None;
        }
        let bytes = read();
        let cost = start.elapsed();
        self.next = Some(start + cost.mul_f64(1.0 / SAMPLER_DUTY));
        Some(bytes)
    }
}

fn process_resident_bytes(pid: u32) -> u64 {
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        && let Some(kb) = pss_kib(&text)
    {
        return kb * 1024;
    }
    rss_bytes(pid)
}

/// Resident set size of one process (shared pages counted in full); 0 if it is gone.
fn rss_bytes(pid: u32) -> u64 {
    procfs::process::Process::new(pid as i32)
        .and_then(|p| p.statm())
        .map_or(0, |s| s.resident * procfs::page_size())
}

/// The `Pss:` line of `/proc/PID/smaps_rollup`, in KiB.
fn pss_kib(smaps_rollup: &str) -> Option<u64> {
    smaps_rollup.lines().find_map(|l| {
        let kb = l.strip_prefix("Pss:")?.trim().strip_suffix("kB")?;
        kb.trim().parse().ok()
    })
}

/// Clears the referenced bits of every page of `pids` (`/proc/PID/clear_refs`), so that
/// [`referenced_file_bytes`] afterwards counts only what the job touches from now on. Needs root
/// (or the processes' owner); a process that is gone is skipped.
pub fn clear_referenced(pids: &[u32]) {
    for pid in pids {
        let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "1");
    }
}

/// File-backed mapped pages of `pids` referenced since [`clear_referenced`]: the job's hot
/// mapped files (shared libraries such as libtorch, memory-mapped data). A mapping that several
/// processes share (forked workers) counts once, at its largest; mappings of files under
/// `exclude` (the dataset, which the cache model accounts for itself) are left out, and so is
/// shared memory (`/dev/shm`, memfd, System V), which the cgroup counts as `shmem` already.
pub fn referenced_file_bytes(pids: &[u32], exclude: Option<&std::path::Path>) -> u64 {
    let mut hot: std::collections::HashMap<MappingKey, u64> = std::collections::HashMap::new();
    for pid in pids {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) else {
            continue;
        };
        for (key, kib) in referenced_file_kib(&text, exclude) {
            let e = hot.entry(key).or_default();
            *e = (*e).max(kib);
        }
    }
    hot.values().sum::<u64>() * 1024
}

/// Whether a mapping's path is shared memory rather than a file on a disk.
fn is_shared_memory(path: &str) -> bool {
    path.starts_with("/dev/shm/") || path.starts_with("/memfd:") || path.starts_with("/SYSV")
}

/// A file mapping: device, inode, offset in the file.
type MappingKey = (String, u64, u64);

/// How a job maps the files of its dataset into memory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DatasetMaps {
    /// Some file under the dataset is mapped: the job reads it through the map, and when it
    /// opens the file says nothing of what it reads (a loader that maps chunks may open one
    /// for every sample it takes from it).
    pub mapped: bool,
    /// Some such mapping lacks both `MADV_RANDOM` and `MADV_SEQUENTIAL` (neither `rr` nor `sr`
    /// among its `VmFlags` in smaps): a page fault on it reads the device's read-ahead window
    /// around the page, not only the page.
    pub read_around: bool,
    /// Bytes of such mappings advised `MADV_SEQUENTIAL` (`sr`): what the kernel reads ahead
    /// of the job's use. A part of a file mapped by several processes counts once.
    pub sequential_bytes: u64,
    /// Processes that map a file under the dataset or hold one open: the job's readers (a
    /// data loader's workers).
    pub readers: u32,
}

/// How `pids` map files under `dataset`, and how many of them read it.
pub fn dataset_maps(pids: &[u32], dataset: &std::path::Path) -> DatasetMaps {
    let mut maps = DatasetMaps::default();
    let mut sequential = std::collections::BTreeMap::new();
    for pid in pids {
        let mut reads = false;
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) {
            let m = dataset_mappings(&text, dataset, &mut sequential);
            maps.mapped |= m.mapped;
            maps.read_around |= m.read_around;
            reads = m.mapped;
        }
        reads = reads || holds_open(*pid, dataset);
        maps.readers += u32::from(reads);
    }
    maps.sequential_bytes = sequential.values().sum();
    maps
}

/// Whether process `pid` has a file under `dataset` open.
fn holds_open(pid: u32, dataset: &std::path::Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target.starts_with(dataset)))
}

/// How one process's `smaps` maps files under `dataset`; its `MADV_SEQUENTIAL` mappings go
/// into `sequential` (their size, by where they start in which file), which the caller sums
/// over its processes (`sequential_bytes` is left at 0 here).
fn dataset_mappings(
    smaps: &str,
    dataset: &std::path::Path,
    sequential: &mut std::collections::BTreeMap<MappingKey, u64>,
) -> DatasetMaps {
    let mut maps = DatasetMaps::default();
    // The dataset mapping being read, `None` outside the dataset.
    let mut in_dataset: Option<(MappingKey, u64)> = None;
    for line in smaps.lines() {
        if let Some(fields) = mapping_header(line) {
            in_dataset = fields
                .get(5)
                .is_some_and(|p| std::path::Path::new(p).starts_with(dataset))
                .then(|| (mapping_key(&fields), mapping_size(fields[0])));
            maps.mapped |= in_dataset.is_some();
        } else if let Some(flags) = line.strip_prefix("VmFlags:")
            && let Some((key, size)) = &in_dataset
        {
            // MADV_RANDOM reads only the page; MADV_SEQUENTIAL reads ahead of it, which a
            // job that reads the map in order uses.
            let random = flags.split_whitespace().any(|f| f == "rr");
            let ahead = flags.split_whitespace().any(|f| f == "sr");
            maps.read_around |= !(random || ahead);
            if ahead {
                let e = sequential.entry(key.clone()).or_default();
                *e = (*e).max(*size);
            }
        }
    }
    maps
}

/// Device, inode and file offset of a smaps mapping header's fields.
fn mapping_key(fields: &[&str]) -> MappingKey {
    (
        fields[3].to_string(),
        fields[4].parse().unwrap_or(0),
        u64::from_str_radix(fields[2], 16).unwrap_or(0),
    )
}

/// Bytes of a mapping from its smaps address range (`start-end`, hexadecimal); 0 where it does
/// not parse.
fn mapping_size(range: &str) -> u64 {
    range
        .split_once('-')
        .and_then(|(a, b)| {
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .map_or(0, |(a, b)| b.saturating_sub(a))
}

/// The fields of a smaps mapping header (`start-end perms offset dev inode [path]`), or `None`
/// for the lines inside a mapping.
fn mapping_header(line: &str) -> Option<Vec<&str>> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    (fields.len() >= 5 && fields[0].contains('-') && !fields[0].ends_with(':')).then_some(fields)
}

/// `Referenced:` of each file-backed mapping in a `/proc/PID/smaps` text, KiB.
fn referenced_file_kib(smaps: &str, exclude: Option<&std::path::Path>) -> Vec<(MappingKey, u64)> {
    let mut out = Vec::new();
    let mut current: Option<MappingKey> = None;
    for line in smaps.lines() {
        if let Some(fields) = mapping_header(line) {
            let inode: u64 = fields[4].parse().unwrap_or(0);
            let path = fields.get(5).copied().unwrap_or("");
            let file_backed = inode != 0 && path.starts_with('/') && !is_shared_memory(path);
            let excluded = exclude.is_some_and(|d| std::path::Path::new(path).starts_with(d));
            current = (file_backed && !excluded).then(|| mapping_key(&fields));
        } else if let (Some(key), Some(kb)) = (&current, line.strip_prefix("Referenced:"))
            && let Some(kib) = kb
                .trim()
                .strip_suffix("kB")
                .and_then(|v| v.trim().parse().ok())
        {
            out.push((key.clone(), kib));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::waitpid;
    use nix::unistd::{ForkResult, fork};

    #[test]
    fn counts_referenced_pages_of_file_mappings_only() {
        let smaps = "\
7f00-7f10 r-xp 00001000 fe:01 4242 /usr/lib/libtorch_cpu.so
Rss: 900 kB
Referenced: 300 kB
7f10-7f20 rw-p 00000000 00:00 0
Referenced: 5000 kB
7f20-7f30 r--p 00000000 fe:01 77 /data/shards/shard-0001.tar
Referenced: 64 kB
7ffc-7ffd rw-p 00000000 00:00 0 [stack]
Referenced: 12 kB
7e00-7e40 rw-s 00000000 00:1a 991 /dev/shm/torch_1234_5678_0 (deleted)
Referenced: 150000 kB
7d00-7d40 rw-s 00000000 00:01 992 /memfd:torch (deleted)
Referenced: 150000 kB
";
        let all = referenced_file_kib(smaps, None);
        assert_eq!(all.len(), 2, "shared memory is the cgroup's shmem: {all:?}");
        assert_eq!(all[0], (("fe:01".into(), 4242, 0x1000), 300));
        let without_data = referenced_file_kib(smaps, Some(std::path::Path::new("/data/shards")));
        assert_eq!(without_data.len(), 1, "the dataset's mapping is left out");
    }

    #[test]
    fn a_dataset_mapped_without_advice_reads_around_its_faults() {
        let smaps = |flags: &str| {
            format!(
                "7f00-7f10 r-xp 00001000 fe:01 4242 /usr/lib/libtorch_cpu.so\nVmFlags: rd ex mr mw me\n\
                 7f20-7f30 r--s 00000000 fe:01 77 /data/set/data.mdb\nReferenced: 64 kB\nVmFlags: {flags}\n"
            )
        };
        let data = std::path::Path::new("/data/set");
        // One process's maps, with its sequential bytes summed as `dataset_maps` does.
        let look = |text: &str, dir: &std::path::Path| {
            let mut sequential = std::collections::BTreeMap::new();
            let maps = dataset_mappings(text, dir, &mut sequential);
            DatasetMaps {
                sequential_bytes: sequential.values().sum(),
                ..maps
            }
        };
        let no_advice = DatasetMaps {
            mapped: true,
            read_around: true,
            sequential_bytes: 0,
            readers: 0,
        };
        assert_eq!(look(&smaps("rd mr mw me sd"), data), no_advice);
        assert_eq!(
            look(&smaps("rd mr mw me sd rr"), data),
            DatasetMaps {
                read_around: false,
                ..no_advice
            },
            "MADV_RANDOM"
        );
        assert_eq!(
            look(&smaps("rd mr mw me sd sr"), data),
            DatasetMaps {
                read_around: false,
                sequential_bytes: 0x10,
                ..no_advice
            },
            "MADV_SEQUENTIAL"
        );
        let both = format!(
            "{}{}",
            smaps("rd sr"),
            "7f40-7f50 r--s 00000000 fe:01 78 /data/set/b.bin\nVmFlags: rd\n"
        );
        assert_eq!(
            look(&both, data),
            DatasetMaps {
                sequential_bytes: 0x10,
                ..no_advice
            },
            "one mapping without advice is enough"
        );
        assert_eq!(
            look(&smaps("rd mr"), std::path::Path::new("/other")),
            DatasetMaps::default()
        );
    }

    #[test]
    fn a_memory_mapped_numpy_array_reads_around_and_advice_stops_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples.npy");
        std::fs::write(&path, vec![1u8; 1 << 20]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let len = 1usize << 20;
        // SAFETY: a fresh read-only shared mapping of a file this test owns, unmapped below.
        let map = unsafe {
            use std::os::fd::AsRawFd;
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        let me = [std::process::id()];
        let canonical = std::fs::canonicalize(dir.path()).unwrap();
        assert!(dataset_maps(&me, &canonical).read_around);
        // SAFETY: the mapping made above, still mapped.
        assert_eq!(unsafe { libc::madvise(map, len, libc::MADV_RANDOM) }, 0);
        let maps = dataset_maps(&me, &canonical);
        assert!(maps.mapped && !maps.read_around);
        // SAFETY: the same mapping.
        assert_eq!(unsafe { libc::madvise(map, len, libc::MADV_NORMAL) }, 0);
        assert!(dataset_maps(&me, &canonical).read_around);
        // SAFETY: the same mapping.
        assert_eq!(unsafe { libc::madvise(map, len, libc::MADV_SEQUENTIAL) }, 0);
        let maps = dataset_maps(&me, &canonical);
        assert!(maps.mapped && !maps.read_around);
        assert_eq!(
            maps.sequential_bytes, len as u64,
            "the whole map is read ahead"
        );
        assert_eq!(
            dataset_maps(&[me[0], me[0]], &canonical).sequential_bytes,
            len as u64,
            "a map seen from two processes counts once"
        );
        // SAFETY: unmapping the mapping made above, used no more.
        assert_eq!(unsafe { libc::munmap(map, len) }, 0);
    }

    #[test]
    fn a_mapped_file_the_job_touches_is_hot_and_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lib.bin");
        std::fs::write(&path, vec![7u8; 16 << 20]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mapping = crate::harness::memory::file_mapping::FileMapping::new(&file).expect("mmap");
        let me = std::process::id();
        clear_referenced(&[me]);
        // Touch the first 1 MiB only.
        let sum: u64 = mapping.bytes()[..1 << 20]
            .iter()
            .step_by(4096)
            .map(|&b| b as u64)
            .sum();
        std::hint::black_box(sum);
        let hot = referenced_file_bytes(&[me, me], None);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let ino = std::os::unix::fs::MetadataExt::ino(&file.metadata().unwrap());
        let this: u64 = referenced_file_kib(&smaps, None)
            .into_iter()
            .filter(|((_, inode, _), _)| *inode == ino)
            .map(|(_, kib)| kib)
            .sum();
        drop(mapping);
        if nix::unistd::geteuid().is_root() {
            // 1 MiB touched of the 16 MiB mapped; the kernel maps around a fault, and a large
            // folio is referenced whole, so somewhat more may count, never the untouched rest.
            assert!((1024..=4096).contains(&this), "{this} KiB referenced");
            assert!(
                hot >= this * 1024,
                "the same process twice counts its pages once or more"
            );
        }
    }

    /// A read that costs 5 ms waits 500 ms for the next; a cheap one is read at every poll.
    #[test]
    fn an_expensive_read_is_sampled_seldom() {
        let mut slow = ResidentSampler::default();
        let read = || {
            std::thread::sleep(std::time::Duration::from_millis(5));
            7
        };
        assert_eq!(slow.sample(read), Some(7));
        assert_eq!(slow.sample(|| 8), None);
        let mut cheap = ResidentSampler::default();
        assert_eq!(cheap.sample(|| 1), Some(1));
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert_eq!(cheap.sample(|| 2), Some(2));
    }

    #[test]
    fn parses_pss_from_smaps_rollup() {
        let text = "55d0-7ffd ---p 00000000 00:00 0 [rollup]\nRss: 1000 kB\nPss: 612 kB\nPss_Anon: 500 kB\n";
        assert_eq!(pss_kib(text), Some(612));
        assert_eq!(pss_kib("Rss: 3 kB\n"), None);
    }

    #[test]
    fn pages_shared_with_a_forked_child_count_once() {
        // 64 MiB of touched anonymous memory, then a fork: parent and child share it.
        let buf = vec![1u8; 64 << 20];
        std::hint::black_box(&buf);
        // SAFETY: the child only calls async-signal-safe pause() until it is killed.
        let child = match unsafe { fork() }.expect("fork") {
            ForkResult::Child => loop {
                unsafe { libc::pause() };
            },
            ForkResult::Parent { child } => child,
        };
        let me = std::process::id();
        let them = child.as_raw() as u32;
        let rss_sum = rss_bytes(me) + rss_bytes(them);
        let tree = tree_resident_bytes(&[me, them]);
        kill(child, Signal::SIGKILL).unwrap();
        waitpid(child, None).unwrap();
        drop(buf);
        // The shared 64 MiB appears in both RSS values but only once in the tree's total.
        assert!(rss_sum > 128 << 20, "rss sum {rss_sum}");
        assert!(
            tree + (48 << 20) < rss_sum,
            "tree {tree} vs rss sum {rss_sum}"
        );
        assert!(tree > 64 << 20, "tree {tree}");
    }

    #[test]
    fn a_process_holding_a_dataset_file_open_reads_it() {
        let dataset = tempfile::tempdir().expect("temp dir");
        let elsewhere = tempfile::tempdir().expect("temp dir");
        let path = dataset.path().join("images.h5");
        std::fs::write(&path, b"data").expect("write");
        let me = std::process::id();
        let before = dataset_maps(&[me], dataset.path()).readers;
        let file = std::fs::File::open(&path).expect("open");
        assert_eq!(dataset_maps(&[me], dataset.path()).readers, before + 1);
        assert_eq!(dataset_maps(&[me], elsewhere.path()).readers, 0);
        drop(file);
        assert_eq!(dataset_maps(&[me], dataset.path()).readers, before);
    }
}
