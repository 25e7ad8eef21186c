//! `input-pipeline generate`: deterministic synthetic image dataset.
//!
//! Layout (ImageFolder-like): `DIR/class_KKK/img_IIIIII.jpg`.  Every image is
//! a pure function of `(seed, index, width, height, format)`, so two runs with
//! the same parameters produce byte-identical files.
//!
//! Crash safety: each image is written to a hidden temp file and renamed into
//! place; `DIR/.generating` records the parameters while work is in progress
//! and `DIR/.complete` (same content) is written last.  A dataset without a
//! matching `.complete` marker is resumed (same parameters) or wiped and
//! regenerated (different parameters).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use image::ExtendedColorType;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::json;

use crate::{COMPLETE_MARKER, mix_seed};

const IN_PROGRESS_MARKER: &str = ".generating";
/// Bumped whenever the image synthesis changes, so old datasets are rebuilt.
const GENERATOR_VERSION: u64 = 1;
const JPEG_QUALITY: u8 = 90;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Jpeg,
    Png,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Jpeg => "jpg",
            Format::Png => "png",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Format::Jpeg => "jpeg",
            Format::Png => "png",
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct GenerateArgs {
    /// Output directory (created if missing).
    #[arg(long)]
    pub dir: PathBuf,
    /// Number of images to write.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub samples: u64,
    /// Image width in pixels.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(8..=8192))]
    pub width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(8..=8192))]
    pub height: u32,
    /// Seed of the deterministic generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// File format of the images.
    #[arg(long, value_enum, default_value_t = Format::Jpeg)]
    pub format: Format,
    /// Number of class sub-directories (image i goes to class i % classes).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub classes: u32,
    /// Generator threads (default: CPUs available to the process).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
}

impl GenerateArgs {
    /// Parameters that define the dataset content (recorded in the markers).
    fn params(&self) -> serde_json::Value {
        json!({
            "generator": "input-pipeline",
            "version": GENERATOR_VERSION,
            "samples": self.samples,
            "width": self.width,
            "height": self.height,
            "seed": self.seed,
            "format": self.format.name(),
            "classes": self.classes,
            "quality": JPEG_QUALITY,
        })
    }

    fn relative_path(&self, index: u64) -> PathBuf {
        let class = index % u64::from(self.classes);
        PathBuf::from(format!("class_{class:03}"))
            .join(format!("img_{index:06}.{}", self.format.extension()))
    }
}

fn read_marker(path: &Path) -> Option<serde_json::Value> {
    let text = fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Write `content` to `path` atomically (temp file in the same dir + rename).
fn write_atomic(path: &Path, content: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .context("bad file name")?;
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    {
        let mut f =
            fs::File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(content)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
    }
    fs::rename(&tmp, path)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
    Ok(())
}

fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// Remove what a previous `generate` may have left in `dir` (and only that:
/// hidden temp files, plus, unless `temps_only`, markers and the `img_*`
/// files of `class_*` directories).
fn clean(dir: &Path, temps_only: bool) -> Result<()> {
    if !temps_only {
        for marker in [COMPLETE_MARKER, IN_PROGRESS_MARKER] {
            let p = dir.join(marker);
            if p.exists() {
                fs::remove_file(&p).with_context(|| format!("cannot remove {}", p.display()))?;
            }
        }
    }
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        if entry.file_type()?.is_dir() && name.starts_with("class_") {
            for sub in fs::read_dir(&path)? {
                let sub = sub?;
                let sname = sub.file_name();
                let sname = sname.to_string_lossy();
                if sub.file_type()?.is_file()
                    && (is_temp(&sname) || (!temps_only && sname.starts_with("img_")))
                {
                    fs::remove_file(sub.path())?;
                }
            }
            if !temps_only {
                // Left alone if the user put something else in it.
                let _ = fs::remove_dir(&path);
            }
        } else if is_temp(&name) {
            fs::remove_file(&path)?;
        }
    }
    Ok(())
}

pub fn run(args: &GenerateArgs) -> Result<()> {
    let dir = &args.dir;
    let params = args.params();
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;

    let complete = dir.join(COMPLETE_MARKER);
    match read_marker(&complete) {
        Some(p) if p == params => {
            eprintln!(
                "input-pipeline generate: {} already holds the complete dataset ({} samples), nothing to do",
                dir.display(),
                args.samples
            );
            return Ok(());
        }
        Some(_) => eprintln!(
            "input-pipeline generate: {} holds a dataset with different parameters; regenerating",
            dir.display()
        ),
        None if complete.exists() => eprintln!(
            "input-pipeline generate: unreadable {}; regenerating",
            complete.display()
        ),
        None => {}
    }

    let in_progress = dir.join(IN_PROGRESS_MARKER);
    let resume =
        complete.symlink_metadata().is_err() && read_marker(&in_progress) == Some(params.clone());
    if resume {
        eprintln!(
            "input-pipeline generate: resuming an interrupted generation in {}",
            dir.display()
        );
        clean(dir, true)?;
    } else {
        clean(dir, false)?;
        write_atomic(&in_progress, format!("{params}\n").as_bytes())?;
    }
    for class in 0..u64::from(args.classes).min(args.samples) {
        let d = dir.join(format!("class_{class:03}"));
        fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    }

    let threads = args.threads.map(|t| t as usize).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let bytes = AtomicUsize::new(0);
    let total = args.samples as usize;
    let started = Instant::now();
    let report_every = (total / 20).max(1);

    let worker = || -> Result<()> {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= total {
                return Ok(());
            }
            let path = dir.join(args.relative_path(i as u64));
            if !(resume && path.is_file()) {
                let data = synth_image(args, i as u64)?;
                bytes.fetch_add(data.len(), Ordering::Relaxed);
                write_atomic(&path, &data)?;
            }
            let d = done.fetch_add(1, Ordering::Relaxed) + 1;
            if d.is_multiple_of(report_every) || d == total {
                eprintln!(
                    "input-pipeline generate: {d}/{total} images ({:.1} s)",
                    started.elapsed().as_secs_f64()
                );
            }
        }
    };
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..threads.clamp(1, total))
            .map(|_| s.spawn(worker))
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("generator thread panicked"))??;
        }
        Ok(())
    })?;

    // Marker last: only now is the dataset complete.
    write_atomic(&complete, format!("{params}\n").as_bytes())?;
    let _ = fs::remove_file(&in_progress);
    let written = bytes.load(Ordering::Relaxed);
    eprintln!(
        "input-pipeline generate: wrote {} ({} samples{}) in {:.1} s",
        dir.display(),
        total,
        if written > 0 {
            format!(
                ", {:.1} MB new, {:.1} KB/image",
                written as f64 / 1e6,
                written as f64 / 1e3 / total as f64
            )
        } else {
            String::new()
        },
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Synthesise the encoded bytes of image `index`.
pub fn synth_image(args: &GenerateArgs, index: u64) -> Result<Vec<u8>> {
    let (w, h) = (args.width, args.height);
    let pixels = synth_pixels(args.seed, index, args.classes, w, h);
    let mut out = Vec::with_capacity((w * h) as usize / 2);
    match args.format {
        Format::Jpeg => JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)
            .encode(&pixels, w, h, ExtendedColorType::Rgb8)
            .context("JPEG encoding failed")?,
        Format::Png => {
            use image::ImageEncoder;
            PngEncoder::new(&mut out)
                .write_image(&pixels, w, h, ExtendedColorType::Rgb8)
                .context("PNG encoding failed")?
        }
    }
    if out.is_empty() {
        bail!("encoder produced no data");
    }
    Ok(out)
}

fn unit(rng: &mut ChaCha8Rng) -> f32 {
    (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32
}

/// Textured RGB content: a class-tinted gradient, a few oriented sine
/// gratings, random shapes and per-pixel noise (so JPEG files are 20-60 KB at
/// 256x256 and decoding them is real work).
pub fn synth_pixels(seed: u64, index: u64, classes: u32, w: u32, h: u32) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix_seed(seed, index));
    let class = (index % u64::from(classes)) as f32;
    let hue = class / classes as f32 * std::f32::consts::TAU;
    let tint = [
        0.5 + 0.4 * hue.cos(),
        0.5 + 0.4 * (hue + 2.1).cos(),
        0.5 + 0.4 * (hue + 4.2).cos(),
    ];
    let base: [[f32; 3]; 2] = [
        [unit(&mut rng), unit(&mut rng), unit(&mut rng)],
        [unit(&mut rng), unit(&mut rng), unit(&mut rng)],
    ];
    // Sine gratings: (kx, ky, phase, amplitude, channel weights).
    let waves: Vec<(f32, f32, f32, f32, [f32; 3])> = (0..3)
        .map(|_| {
            let angle = unit(&mut rng) * std::f32::consts::PI;
            let freq = 0.02 + unit(&mut rng) * 0.25; // radians per pixel
            (
                freq * angle.cos(),
                freq * angle.sin(),
                unit(&mut rng) * std::f32::consts::TAU,
                20.0 + unit(&mut rng) * 30.0,
                [unit(&mut rng), unit(&mut rng), unit(&mut rng)],
            )
        })
        .collect();
    // Shapes: axis-aligned ellipses and rectangles.
    let shapes: Vec<(bool, f32, f32, f32, f32, [f32; 3])> = (0..6)
        .map(|_| {
            (
                rng.next_u32() & 1 == 0,
                unit(&mut rng) * w as f32,
                unit(&mut rng) * h as f32,
                (0.05 + unit(&mut rng) * 0.25) * w as f32,
                (0.05 + unit(&mut rng) * 0.25) * h as f32,
                [
                    unit(&mut rng) * 255.0,
                    unit(&mut rng) * 255.0,
                    unit(&mut rng) * 255.0,
                ],
            )
        })
        .collect();
    let noise_amp = 10.0 + unit(&mut rng) * 14.0;

    let mut out = Vec::with_capacity((w * h * 3) as usize);
    let mut noise_bits = 0u32;
    let mut noise_left = 0;
    for y in 0..h {
        let fy = y as f32;
        let ty = fy / h as f32;
        for x in 0..w {
            let fx = x as f32;
            let mut px = [0f32; 3];
            for (c, p) in px.iter_mut().enumerate() {
                *p = 255.0 * tint[c] * (base[0][c] * (1.0 - ty) + base[1][c] * ty);
            }
            for (kx, ky, phase, amp, weight) in &waves {
                let s = (kx * fx + ky * fy + phase).sin() * amp;
                for c in 0..3 {
                    px[c] += s * weight[c];
                }
            }
            for (ellipse, cx, cy, rx, ry, color) in &shapes {
                let dx = (fx - cx) / rx;
                let dy = (fy - cy) / ry;
                let inside = if *ellipse {
                    dx * dx + dy * dy <= 1.0
                } else {
                    dx.abs() <= 1.0 && dy.abs() <= 1.0
                };
                if inside {
                    for c in 0..3 {
                        px[c] = 0.35 * px[c] + 0.65 * color[c];
                    }
                }
            }
            for p in &mut px {
                if noise_left == 0 {
                    noise_bits = rng.next_u32();
                    noise_left = 4;
                }
                let n = (noise_bits & 0xff) as f32 / 255.0 - 0.5;
                noise_bits >>= 8;
                noise_left -= 1;
                out.push((*p + n * 2.0 * noise_amp).clamp(0.0, 255.0) as u8);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path, samples: u64, seed: u64) -> GenerateArgs {
        GenerateArgs {
            dir: dir.to_path_buf(),
            samples,
            width: 64,
            height: 48,
            seed,
            format: Format::Jpeg,
            classes: 3,
            threads: Some(2),
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("input-pipeline-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn synthesis_is_deterministic() {
        let a = args(Path::new("unused"), 1, 42);
        assert_eq!(synth_image(&a, 5).unwrap(), synth_image(&a, 5).unwrap());
        assert_ne!(synth_image(&a, 5).unwrap(), synth_image(&a, 6).unwrap());
        let b = args(Path::new("unused"), 1, 43);
        assert_ne!(synth_image(&a, 5).unwrap(), synth_image(&b, 5).unwrap());
    }

    #[test]
    fn default_size_images_are_20_to_60_kb_and_decode() {
        let mut a = args(Path::new("unused"), 1, 1);
        a.width = 256;
        a.height = 256;
        for i in 0..4 {
            let data = synth_image(&a, i).unwrap();
            let kb = data.len() as f64 / 1e3;
            assert!((20.0..=60.0).contains(&kb), "image {i}: {kb:.1} KB");
            let img = image::load_from_memory(&data).unwrap();
            assert_eq!((img.width(), img.height()), (256, 256));
        }
    }

    #[test]
    fn generate_is_idempotent_and_resumes() {
        let dir = scratch("gen");
        let a = args(&dir, 7, 3);
        run(&a).unwrap();
        let files = crate::dataset_files(&dir).unwrap();
        assert_eq!(files.len(), 7);
        assert!(dir.join(COMPLETE_MARKER).is_file());
        assert!(!dir.join(IN_PROGRESS_MARKER).exists());
        let first = fs::read(&files[0]).unwrap();
        let mtime = fs::metadata(&files[0]).unwrap().modified().unwrap();

        // Same parameters: nothing rewritten.
        run(&a).unwrap();
        assert_eq!(fs::metadata(&files[0]).unwrap().modified().unwrap(), mtime);

        // Simulate an interrupted run: marker gone, one file missing, a temp left.
        fs::remove_file(dir.join(COMPLETE_MARKER)).unwrap();
        fs::write(dir.join(IN_PROGRESS_MARKER), format!("{}\n", a.params())).unwrap();
        fs::remove_file(&files[3]).unwrap();
        fs::write(files[3].with_file_name(".img_x.jpg.1.tmp"), b"junk").unwrap();
        run(&a).unwrap();
        assert_eq!(crate::dataset_files(&dir).unwrap(), files);
        assert!(dir.join(COMPLETE_MARKER).is_file());
        assert!(!files[3].with_file_name(".img_x.jpg.1.tmp").exists());

        // Different parameters: wiped and regenerated.
        let b = args(&dir, 4, 9);
        run(&b).unwrap();
        let files_b = crate::dataset_files(&dir).unwrap();
        assert_eq!(files_b.len(), 4);
        assert_ne!(fs::read(&files_b[0]).unwrap(), first);
        let _ = fs::remove_dir_all(&dir);
    }
}
