//! `input-pipeline`: a CPU-only emulator of a deep-learning training job.
//!
//! * `generate` writes a deterministic synthetic ImageFolder-like dataset of
//!   textured JPEG (or PNG) images.
//! * `train` runs a real input pipeline over it (read, decode, random crop and
//!   resize, convert to `f32` tensors) feeding a consumer that emulates an
//!   accelerator taking one batch every `--step-ms`.  With enough CPU the job
//!   saturates at `batch * 1000 / step_ms` samples/s (accelerator-bound); with
//!   too little CPU it is input-bound, which is what the profiler measures.
//!
//! Progress is reported with the profiler's progress-file protocol (see
//! `report.rs`).  This binary deliberately does not depend on the `profiler`
//! library crate.

mod generate;
mod report;
mod train;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "input-pipeline",
    version,
    about = "CPU-only training-job emulator: synthetic image dataset + real input pipeline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write a deterministic synthetic image dataset (DIR/class_K/img_I.jpg).
    Generate(generate::GenerateArgs),
    /// Run the input pipeline and emulated accelerator over a dataset.
    Train(train::TrainArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate(args) => generate::run(&args),
        Command::Train(args) => train::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("input-pipeline: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Name of the marker file written last by `generate`.
pub const COMPLETE_MARKER: &str = ".complete";

/// Message used whenever a dataset is missing or incomplete.
pub fn generate_hint(dir: &std::path::Path) -> String {
    format!(
        "run `input-pipeline generate --dir {} --samples N` first",
        shell_quote(dir)
    )
}

fn shell_quote(path: &std::path::Path) -> String {
    let s = path.display().to_string();
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Mix a seed and an index into a well-distributed 64-bit seed (splitmix64).
pub fn mix_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed
        .wrapping_add(index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x6A09_E667_F3BC_C909);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Directory listing helper shared by both subcommands.
pub fn dataset_files(dir: &std::path::Path) -> anyhow::Result<Vec<PathBuf>> {
    use anyhow::Context;
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read dataset directory {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let ft = entry.file_type()?;
        if ft.is_dir() {
            for sub in std::fs::read_dir(&path)
                .with_context(|| format!("cannot read {}", path.display()))?
            {
                let sub = sub?;
                if sub.file_type()?.is_file() && is_image(&sub.path()) {
                    files.push(sub.path());
                }
            }
        } else if ft.is_file() && is_image(&path) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn is_image(path: &std::path::Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.starts_with('.') {
        return false; // temp files of an interrupted `generate`
    }
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .as_deref(),
        Some("jpg" | "jpeg" | "png")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_seed_spreads() {
        assert_ne!(mix_seed(1, 0), mix_seed(1, 1));
        assert_ne!(mix_seed(1, 0), mix_seed(2, 0));
        assert_eq!(mix_seed(7, 9), mix_seed(7, 9));
    }

    #[test]
    fn hint_quotes_odd_paths() {
        assert!(generate_hint(std::path::Path::new("data/x")).contains("--dir data/x "));
        assert!(generate_hint(std::path::Path::new("my data")).contains("--dir 'my data' "));
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from(["input-pipeline", "train", "--data", "d", "--workers", "2"])
            .unwrap();
        match cli.command {
            Command::Train(a) => assert_eq!(a.workers, Some(2)),
            _ => panic!("wrong subcommand"),
        }
    }
}
