//! `profiler deploy --slurm`: a short trace's jobs as Slurm jobs, suspended and resumed with
//! scontrol where the schedule preempts them, every one finished and nothing left in Slurm.

use crate::cluster::Cluster;
use std::path::Path;

const PROFILER: &str = env!("CARGO_BIN_EXE_profiler");
const INPUT_PIPELINE: &str = env!("CARGO_BIN_EXE_input-pipeline");

/// Two long jobs on two slots, then a short one: SRTF suspends a long job for it.
pub fn a_short_trace_through_slurm(c: &Cluster) {
    let dir = c.dir().join("deploy");
    let (jobs, matrices) = (dir.join("jobs"), dir.join("matrices"));
    std::fs::create_dir_all(&jobs).unwrap();
    std::fs::create_dir_all(&matrices).unwrap();
    let data = dir.join("data");
    std::fs::write(
        jobs.join("input-pipeline.toml"),
        format!(
            r#"schema_version = 1
name = "input-pipeline"
command = ["{INPUT_PIPELINE}", "train", "--data", "{{dataset}}", "--workers", "1", "--batch", "16", "--crop", "64", "--prefetch", "1", "--step-ms", "20"]
batch_size_per_gpu = 16
[dataset]
path = "{data}"
generate = ["{INPUT_PIPELINE}", "generate", "--dir", "{{dataset}}", "--samples", "300", "--width", "128", "--height", "128"]
[throughput]
protocol = "progress-file"
[sweep]
cpu = [1]
"#,
            data = data.display()
        ),
    )
    .unwrap();
    let matrix = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("matrices/examples/input-pipeline.measured.matrix.jsonl");
    std::fs::copy(&matrix, matrices.join("input-pipeline.matrix.jsonl")).unwrap();
    // Work in batches of 16: ~30 s, ~30 s and ~5 s at the matrix's 1-CPU rate.
    std::fs::write(
        dir.join("trace.csv"),
        "0,input-pipeline,0.0,1200,1\n1,input-pipeline,0.0,1200,1\n2,input-pipeline,6.0,200,1\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cluster.toml"),
        "[[group]]\ncount = 1\ngpus = 2\ncpus = 2\nmemory_gb = 1\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let p = |x: &Path| x.display().to_string();
    let out = c
        .cmd(PROFILER)
        .args(["deploy", "--slurm", "--policy", "srtf", "--round-s", "5"])
        .args(["--trace", &p(&dir.join("trace.csv"))])
        .args(["--jobs", &p(&jobs), "--profiles", &p(&matrices)])
        .args([
            "--cluster",
            &p(&dir.join("cluster.toml")),
            "--out",
            &p(&out_dir),
        ])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "deploy --slurm failed:\n{said}");
    let table = std::fs::read_to_string(out_dir.join("srtf-proportional.jobs.csv")).unwrap();
    let header: Vec<&str> = table.lines().next().unwrap().split(',').collect();
    let finish = header.iter().position(|h| *h == "finish_s").unwrap();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(
        rows.iter().all(|r| !r[finish].is_empty()),
        "every job finished:\n{table}\n{said}"
    );
    // The short job arrived later and finished first: it preempted a long one.
    let f = |i: usize| rows[i][finish].parse::<f64>().unwrap();
    assert!(f(2) < f(0).min(f(1)), "{table}");
    assert!(
        said.contains("suspended 1"),
        "a long job was suspended:\n{said}"
    );
    // A cancelled job is listed until Slurm has finished with it: a leaked one stays.
    let gone = crate::fleet::wait_until(std::time::Duration::from_secs(30), || {
        c.run("squeue", &["-h", "-o", "%i"]).trim().is_empty()
    });
    assert!(
        gone,
        "Slurm jobs left: {}",
        c.run("squeue", &["-h", "-o", "%i %j %T"])
    );
}
