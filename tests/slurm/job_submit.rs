//! `profiler export --format slurm` end to end: slurmctld loads the exported job_submit.lua and
//! applies the exported per-GPU demands to the jobs whose comment names a model.

use crate::cluster::Cluster;
use std::path::Path;
use std::process::Command;

const PROFILER: &str = env!("CARGO_BIN_EXE_profiler");
const ZOO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/matrices/zoo");

/// Exports the demands of two zoo models into the cluster's directory, where slurmctld reads
/// `job_submit.lua` (beside slurm.conf) and the plugin reads the table (`--slurm-table`).
pub fn install_plugin(dir: &Path) {
    let out_dir = dir.join("export");
    let table = dir.join("profiler_demands.csv");
    let out = Command::new(PROFILER)
        .args(["export", "--format", "slurm", "-o"])
        .arg(&out_dir)
        .arg("--slurm-table")
        .arg(&table)
        .arg(format!("{ZOO}/resnet18.matrix.jsonl"))
        .arg(format!("{ZOO}/bert.matrix.jsonl"))
        .output()
        .expect("profiler runs");
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in ["job_submit.lua", "profiler_demands.csv"] {
        std::fs::copy(out_dir.join(f), dir.join(f)).expect("copy exported file");
    }
}

/// model -> (cpus_per_gpu, mem_mb_per_gpu), from the exported table.
fn table(c: &Cluster, model: &str) -> (String, String) {
    let text = std::fs::read_to_string(c.dir().join("profiler_demands.csv")).expect("table");
    text.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0] == model).then(|| (f[1].to_string(), f[2].to_string()))
        })
        .unwrap_or_else(|| panic!("{model} not in table:\n{text}"))
}

/// Submits a held job (`sbatch -H`, so nothing runs) and returns its id and sbatch's stderr,
/// where the plugin's messages to the user appear.
fn submit_held(c: &Cluster, args: &[&str]) -> (String, String) {
    let mut all = vec!["-H", "--parsable", "--wrap", "true"];
    all.extend_from_slice(args);
    let out = c
        .cmd("sbatch")
        .arg("--chdir")
        .arg(c.dir())
        .args(&all)
        .output()
        .expect("sbatch runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "sbatch {args:?}: {stderr}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (id, stderr)
}

/// `Key=value` of `scontrol show job -o`, if present.
fn job_field(c: &Cluster, id: &str, key: &str) -> Option<String> {
    let line = c.run("scontrol", &["show", "job", "-o", id]);
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
}

pub fn demands_applied_by_slurmctld(c: &Cluster) {
    let (cpus, mb) = table(c, "resnet18");

    // A GPU job naming a profiled model gets its per-GPU demand.
    let (id, msg) = submit_held(c, &["--gpus=1", "--comment=resnet18"]);
    assert_eq!(
        job_field(c, &id, "CpusPerTres").as_deref(),
        Some(format!("gres:gpu:{cpus}").as_str()),
        "{msg}"
    );
    assert_eq!(
        job_field(c, &id, "MemPerTres").as_deref(),
        Some(format!("gres:gpu:{mb}").as_str())
    );
    assert!(
        msg.contains(&format!("--cpus-per-gpu={cpus} --mem-per-gpu={mb}")),
        "{msg}"
    );

    // A GPU job without a comment is left alone.
    let (id, msg) = submit_held(c, &["--gpus=1"]);
    assert_eq!(job_field(c, &id, "CpusPerTres"), None, "{msg}");
    assert_eq!(job_field(c, &id, "MemPerTres"), None);
    assert!(!msg.contains("profiler demands"), "{msg}");

    // An unknown model is reported and the job left as submitted.
    let (id, msg) = submit_held(c, &["--gpus=2", "--comment=nosuchmodel"]);
    assert_eq!(job_field(c, &id, "CpusPerTres"), None);
    assert!(
        msg.contains("no profile for model 'nosuchmodel'"),
        "sbatch said: {msg}"
    );

    // A job that asks for no GPU is told why nothing was applied.
    let (id, msg) = submit_held(c, &["--comment=resnet18"]);
    assert_eq!(job_field(c, &id, "CpusPerTres"), None);
    assert!(msg.contains("asks for no GPU"), "{msg}");

    // --cpus-per-task is kept (Slurm refuses it beside --cpus-per-gpu); memory still applied.
    let (bert_cpus, bert_mb) = table(c, "bert");
    let (id, msg) = submit_held(c, &["--gres=gpu:1", "--comment=bert", "-c", "2"]);
    assert_eq!(job_field(c, &id, "CpusPerTres"), None, "{msg}");
    assert_eq!(
        job_field(c, &id, "MemPerTres").as_deref(),
        Some(format!("gres:gpu:{bert_mb}").as_str())
    );
    assert!(
        msg.contains(&format!("does not combine with --cpus-per-gpu={bert_cpus}")),
        "{msg}"
    );
    c.run("scancel", &["--user=root"]);

    // A job that fits the node runs under the applied demand: its step's cgroups hold
    // cpus_per_gpu cores and mem_mb_per_gpu MB.
    let out_file = c.dir().join("bert.out");
    let script = r#"nproc; m=$(grep -E '^[0-9]+:memory:' /proc/self/cgroup | cut -d: -f3); cat /sys/fs/cgroup/memory$(dirname $m)/memory.limit_in_bytes"#;
    let out = c
        .cmd("sbatch")
        .args(["-W", "--gpus=1", "--comment=bert", "-o"])
        .arg(&out_file)
        .args(["--wrap", script])
        .output()
        .expect("sbatch runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_file).expect("job output");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(bert_cpus.as_str()), "{text}");
    let limit: u64 = bert_mb.parse::<u64>().unwrap() << 20;
    assert_eq!(lines.next(), Some(limit.to_string().as_str()), "{text}");
}
