//! Whether the job's Python has PyTorch with CUDA (and what the synthetic dataset needs), asked
//! of the interpreter the spec's command names, offline.

use super::{Check, Verdict};
use crate::spec::LoadedSpec;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NAME: &str = "PyTorch";
/// Importing torch with CUDA can take a while on a cold file cache.
const TIMEOUT: Duration = Duration::from_secs(180);

/// Prints one line: torch version, CUDA build, devices torch sees, torchvision and Pillow.
const PROBE: &str = "import importlib, torch
def version(m):
    try:
        return importlib.import_module(m).__version__
    except Exception as e:
        return 'missing (%s)' % type(e).__name__
n = torch.cuda.device_count() if torch.cuda.is_available() else 0
print('torch %s|cuda %s|%d|torchvision %s|pillow %s' % (torch.__version__, torch.version.cuda, n, version('torchvision'), version('PIL')))";

/// The check, and how many CUDA devices torch sees (0 where it has none or failed).
pub struct TorchCheck {
    pub check: Check,
    pub cuda_devices: usize,
}

pub fn torch_check(spec: Option<&LoadedSpec>) -> TorchCheck {
    let skip = |why: String| TorchCheck {
        check: Check::with(
            NAME,
            Verdict::Skip,
            vec![why],
            "copy workloads/ next to the profiler binary, or pass --job",
        ),
        cuda_devices: 0,
    };
    let Some(spec) = spec else {
        return skip("the job spec could not be read (see the sweep check)".into());
    };
    let Some(python) = spec.spec.command.first() else {
        return skip("the job spec has no command".into());
    };
    let fail = |facts: Vec<String>, fix: &str| TorchCheck {
        check: Check::with(NAME, Verdict::Fail, facts, fix),
        cuda_devices: 0,
    };
    let out = match run_with_timeout(
        Command::new(python)
            .args(["-c", PROBE])
            .current_dir(&spec.working_dir)
            .envs(&spec.spec.env),
        TIMEOUT,
    ) {
        Ok(out) => out,
        Err(e) => {
            return fail(
                vec![format!("{python}: {e}")],
                "install Python 3 and PyTorch (workloads/pytorch/requirements.txt), or point \
                 the spec's command at the Python that has them",
            );
        }
    };
    let line = out.lines().last().unwrap_or_default();
    let fields: Vec<&str> = line.split('|').collect();
    let [torch, cuda, devices, vision, pillow] = fields[..] else {
        return fail(
            vec![format!(
                "{python} cannot import torch: {}",
                out.trim().lines().last().unwrap_or("no output")
            )],
            "install PyTorch's CUDA build for this driver (workloads/pytorch/requirements.txt)",
        );
    };
    let devices: usize = devices.parse().unwrap_or(0);
    let facts = vec![
        format!("{python}: {torch}, {cuda}, {devices} CUDA device(s) visible to torch"),
        format!("{vision}, {pillow}"),
    ];
    let check = if devices == 0 {
        Check::with(
            NAME,
            if cuda.ends_with("None") {
                Verdict::Fail
            } else {
                Verdict::Warn
            },
            facts,
            "torch sees no GPU: a CPU-only build (`cuda None`) needs the CUDA wheel; a CUDA \
             build needs a driver at least as new as its CUDA version, and CUDA_VISIBLE_DEVICES \
             must not hide the GPUs",
        )
    } else if vision.contains("missing") || pillow.contains("missing") {
        Check::with(
            NAME,
            Verdict::Fail,
            facts,
            "install torchvision and Pillow (workloads/pytorch/requirements.txt): the ResNet \
             job and its synthetic dataset need them",
        )
    } else {
        Check::pass(NAME, facts)
    };
    TorchCheck {
        check,
        cuda_devices: devices,
    }
}

/// Runs `cmd`, killed after `timeout`: its stdout when it succeeds, otherwise its exit status
/// and the last line of its stderr.
fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    // One reader per pipe, so a child that fills one pipe never blocks on it.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut text);
            }
            text
        })
    };
    let out_reader = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err_reader = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if status.success() {
        Ok(out)
    } else {
        Err(format!(
            "{status}: {}",
            err.trim().lines().last().unwrap_or("no output")
        ))
    }
}
