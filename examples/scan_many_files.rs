//! Times what a sweep does with a dataset of many small files at the start of every cell:
//! drop it from the page cache, then ask what the cache holds of it. Also checks the sampled
//! estimate against a whole scan after a shuffled partial epoch.
//!
//!     cargo run --release --example scan_many_files -- DIR [FILES] [BYTES]
//!
//! Creates FILES files of BYTES bytes under DIR when it is missing (default 1,000,000 of
//! 4 KiB; DIR must be on a disk, not a tmpfs). Prints each step's wall time.

use profiler::harness::dataset::measure_dataset;
use profiler::harness::page_cache;
use std::path::PathBuf;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or_else(|| anyhow::anyhow!("usage: DIR [FILES] [BYTES]"))?,
    );
    let files: usize = args.next().map_or(Ok(1_000_000), |a| a.parse())?;
    let bytes: usize = args.next().map_or(Ok(4096), |a| a.parse())?;
    if !dir.exists() {
        let t = Instant::now();
        let data = vec![1u8; bytes];
        // 1,000 files a folder, as sharded datasets lay them out.
        for i in 0..files {
            let sub = dir.join(format!("{:04}", i / 1000));
            if i % 1000 == 0 {
                std::fs::create_dir_all(&sub)?;
            }
            std::fs::write(sub.join(format!("{i:07}.bin")), &data)?;
        }
        println!(
            "created {files} files of {bytes} bytes in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let t = Instant::now();
    let ds = measure_dataset(&dir)?;
    println!(
        "walked {} files ({} MB) in {:.2} s",
        ds.files,
        ds.bytes / 1_000_000,
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let dropped = page_cache::evict(&ds.paths);
    println!(
        "evicted (dropped {dropped} files) in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let dropped = page_cache::evict(&ds.paths);
    println!(
        "evicted a cold dataset (dropped {dropped}) in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let cold = ds.cached();
    println!(
        "cell start: cached {} bytes (+- {:?}, {} files asked) in {:.2} s",
        cold.bytes,
        cold.half_width_bytes,
        cold.files_asked,
        t.elapsed().as_secs_f64()
    );
    // A shuffled partial epoch: every fifth file (by a fixed stride over the sorted paths).
    for p in ds.paths.iter().step_by(5) {
        let _ = std::fs::read(p)?;
    }
    let t = Instant::now();
    let sampled = ds.cached();
    let sampled_s = t.elapsed().as_secs_f64();
    let truth = ds.paths.len().div_ceil(5) as u64 * (bytes as u64).div_ceil(4096) * 4096;
    println!(
        "after a fifth of an epoch: sampled {} +- {} bytes in {sampled_s:.2} s; read {truth} bytes \
         ({:+.2}%)",
        sampled.bytes,
        sampled.half_width_bytes.unwrap_or(0),
        100.0 * (sampled.bytes as f64 / truth as f64 - 1.0)
    );
    let t = Instant::now();
    page_cache::evict(&ds.paths);
    println!("evicted again in {:.2} s", t.elapsed().as_secs_f64());
    Ok(())
}
