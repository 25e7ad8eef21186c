//! The replay of a job's reads under a memory level's page cache, against what the kernel's
//! LRU is known to do: samples read through a `MADV_RANDOM` map (a fault reads its page, no
//! read-ahead) in a fresh random order every epoch hit a cache holding `x` of them with
//! probability `x + (1 - x) ln(1 - x)` (the page-cache model's derivation), so storage reads
//! `1 - h` of the samples' bytes. That holds up to about half the data cached; above, the
//! kernel's two lists (a page hit twice is kept on the active one) hit more than LRU does
//! (80% cached: 0.35 of each sample read where LRU misses 0.52), which the test prints.

use super::*;
use profiler::cache_model::page_cache_hit_ratio;
use profiler::harness::memory::reread::{ReplaySetup, replay_level};
use profiler::matrix::ReadAccess;
use std::io::Write as _;

const SAMPLES: u64 = 16_384;
const SAMPLE: u64 = 4096;

#[test]
fn replayed_random_faults_read_what_an_lru_cache_misses() {
    require_caps!("replayed_random_faults_read_what_an_lru_cache_misses");
    let _machine = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("samples.bin");
    let mut f = std::fs::File::create(&path).unwrap();
    let mut page = vec![0u8; SAMPLE as usize];
    for i in 0..SAMPLES {
        page[..8].copy_from_slice(&i.to_le_bytes());
        f.write_all(&page).unwrap();
    }
    f.sync_all().unwrap();
    let root = CgroupRoot::open("profiler-test-replay").unwrap();
    let setup = ReplaySetup {
        files: vec![path],
        sizes: vec![SAMPLES * SAMPLE],
        samples: SAMPLES,
        readers: 2,
        access: ReadAccess::MapRandom,
        read_cap: None,
        timeout: Duration::from_secs(120),
    };
    let dataset = SAMPLES * SAMPLE;
    let replay = |x: f64| {
        let room = (x * dataset as f64) as u64;
        let reads = replay_level(&root, &setup, room, 7, &AtomicBool::new(false)).unwrap();
        let lru = 1.0 - page_cache_hit_ratio(x.min(1.0));
        eprintln!("x = {x}: replay read {reads:.3} of each sample, LRU misses {lru:.3}");
        (reads, lru)
    };
    for x in [0.1, 0.5] {
        let (reads, lru) = replay(x);
        assert!(
            (reads - lru).abs() <= 0.08,
            "x = {x}: {reads:.3} against {lru:.3}"
        );
    }
    let (high, lru) = replay(0.8);
    assert!(
        high <= lru + 0.05,
        "80% cached: {high:.3} against LRU's {lru:.3}"
    );
    let (all, _) = replay(1.2);
    assert!(all <= 0.02, "the whole dataset cached: {all:.3} read again");
}
