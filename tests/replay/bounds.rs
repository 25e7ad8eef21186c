//! Inputs that used to make the replay panic, hang, allocate without bound or print NaN: each
//! is now an error naming the file and line (or the option), or a clean table.

use profiler::cli::replay::{parse_horizon, parse_window};
use profiler::replay::cluster::ClusterSpec;
use profiler::replay::metrics::Summary;
use profiler::replay::workload::synthetic::DurationDist;
use profiler::replay::{ReplayOptions, ReplaySummary, RunResult, Semantics, WorkloadSpec, run};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs `f` on its own thread and fails the test if it takes longer than `secs` (a hang).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("did not finish in time (hang)")
}

fn err_of(opts: ReplayOptions) -> String {
    within(60, move || run(&opts).map(|_| ()).unwrap_err().to_string())
}

fn synergy(path: PathBuf) -> ReplayOptions {
    ReplayOptions {
        workload: WorkloadSpec::SynergyCsv(path),
        ..Default::default()
    }
}

#[test]
fn absurd_work_is_an_error_at_its_line_not_a_hang() {
    let d = tempfile::tempdir().unwrap();
    for (i, work) in ["1e300", "inf", "NaN", "1e20", "0"].iter().enumerate() {
        let p = write(
            d.path(),
            &format!("w{i}.csv"),
            &format!("0,res18,0,100,1\n1,res18,5,{work},1\n"),
        );
        let e = err_of(synergy(p));
        assert!(
            e.contains(&format!("w{i}.csv:2:")) && e.contains("work"),
            "{e}"
        );
    }
    // Arrival times too.
    let p = write(d.path(), "arr.csv", "0,res18,1e300,100,1\n");
    let e = err_of(synergy(p));
    assert!(e.contains("arr.csv:1:") && e.contains("arrival"), "{e}");
}

#[test]
fn horizon_names_the_unfinished_jobs_and_their_lines() {
    let d = tempfile::tempdir().unwrap();
    // 1e10 iterations of res18: years of work, within the per-row bound.
    let p = write(
        d.path(),
        "long.csv",
        "0,res18,0,100,1\n\n7,res18,60,10000000000,1\n",
    );
    let opts = ReplayOptions {
        horizon_s: parse_horizon("2d").unwrap(),
        ..synergy(p)
    };
    let e = err_of(opts);
    assert!(
        e.contains("1 job(s) could not finish")
            && e.contains("job 7")
            && e.contains("long.csv:3")
            && e.contains("--horizon"),
        "{e}"
    );
    // The same trace finishes with a long enough horizon... which for 1e10 iterations is
    // beyond the limit, so the horizon itself is bounded.
    assert!(parse_horizon("1000000y").is_err());
    assert!(parse_horizon("1e300").is_err());
    assert_eq!(parse_horizon("36h").unwrap(), 129600.0);
    // The default is a year.
    assert_eq!(ReplayOptions::default().horizon_s, 365.0 * 86400.0);
}

#[test]
fn horizon_stops_a_synthetic_workload_too() {
    let opts = ReplayOptions {
        workload: WorkloadSpec::Synthetic(profiler::replay::workload::synthetic::SyntheticSpec {
            duration: DurationDist::Fixed(1e7),
            max_jobs: Some(3),
            ..Default::default()
        }),
        horizon_s: 86400.0,
        ..Default::default()
    };
    let e = err_of(opts);
    assert!(
        e.contains("3 job(s) could not finish") && e.contains("job 0"),
        "{e}"
    );
}

#[test]
fn cluster_sizes_are_bounded() {
    // Used to build 4e9 servers.
    let e = ClusterSpec::resolve("synergy-4000000000")
        .unwrap_err()
        .to_string();
    assert!(e.contains("synergy-N needs 1 <= N <= 100000"), "{e}");
    let e = ClusterSpec::resolve("synergy-99999999999999999999")
        .unwrap_err()
        .to_string();
    assert!(e.contains("synergy-N needs"), "{e}");
    assert_eq!(
        ClusterSpec::resolve("synergy-100000").unwrap().groups[0].count,
        100000
    );
    let ok = "[[group]]\ncount = 2\ngpus = 8\ncpus = 24\nmemory_gb = 500\n";
    for (bad, what) in [
        ("count = 4000000000", "servers"),
        ("gpus = 4000000000", "GPUs per server"),
        ("cpus = 1e300", "cpus"),
        ("cpus = nan", "cpus"),
        ("memory_gb = inf", "memory_gb"),
        ("memory_gb = -1.0", "memory_gb"),
    ] {
        let key = bad.split(' ').next().unwrap();
        let body: String = ok
            .lines()
            .map(|l| if l.starts_with(key) { bad } else { l })
            .collect::<Vec<_>>()
            .join("\n");
        // A first, valid group, so the error must point at the second one (line 6).
        let text = format!("name = \"x\"\n{ok}{body}\n");
        let e = ClusterSpec::from_toml(&text, Path::new("big.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("big.toml:7:") && e.contains(what), "{bad}: {e}");
    }
    // Many groups: the total is bounded too.
    let many = "[[group]]\ncount = 60000\ngpus = 8\ncpus = 24\nmemory_gb = 500\n".repeat(2);
    let e = ClusterSpec::from_toml(&many, Path::new("many.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("many.toml:6:") && e.contains("at most 100000"),
        "{e}"
    );
}

#[test]
fn toml_errors_name_the_right_line() {
    let text = "[[group]]\ncount = 2\ngpus = 8\ncpus = 24\nfoo = 1\nmemory_gb = 5\n";
    let e = ClusterSpec::from_toml(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("c.toml:5:") && e.contains("foo"), "{e}");
}

#[test]
fn windows_are_bounded_and_must_hold_jobs() {
    assert!(parse_window("0..18446744073709551615").is_err());
    assert!(parse_window("5..4").is_err());
    assert_eq!(parse_window("4000..=4999").unwrap(), (4000, 4999));
    // Through the library API: an error, not NaN (or an overflow panic).
    let e = err_of(ReplayOptions {
        window: Some((0, u64::MAX)),
        ..Default::default()
    });
    assert!(e.contains("window"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "gap.csv", "0,res18,0,100,1\n10,res18,0,100,1\n");
    let e = err_of(ReplayOptions {
        window: Some((3, 6)),
        ..synergy(p)
    });
    assert!(e.contains("holds no job"), "{e}");
}

/// A summary with no measured job (every statistic undefined).
fn empty_summary() -> ReplaySummary {
    let s = Summary {
        policy: "fifo".into(),
        mechanism: "tune".into(),
        median_jct_s: f64::NAN,
        p99_jct_s: f64::NAN,
        mean_jct_s: f64::INFINITY,
        ..Default::default()
    };
    let base = Summary {
        mechanism: "proportional".into(),
        ..s.clone()
    };
    ReplaySummary {
        cluster: "c".into(),
        profiles: "p".into(),
        workload: "w".into(),
        semantics: Semantics::Exact,
        skipped_wide_jobs: 0,
        totals: (8, 24.0, 500.0),
        runs: [base, s]
            .into_iter()
            .map(|summary| RunResult {
                summary,
                jobs: vec![],
                rounds: vec![],
                finished_jct_s: vec![],
                streamed: false,
            })
            .collect(),
        verdicts: vec![],
    }
}

#[test]
fn no_nan_in_the_table_or_the_files() {
    let s = empty_summary();
    let text = profiler::replay::report::render(&s);
    assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    let d = tempfile::tempdir().unwrap();
    profiler::replay::tables::write_tables(&s.runs, d.path()).unwrap();
    let csv = std::fs::read_to_string(d.path().join("summary.csv")).unwrap();
    assert!(!csv.contains("NaN") && !csv.contains("inf"), "{csv}");
}

#[test]
fn duplicate_ids_name_both_lines() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "dup.csv",
        "0,res18,0,100,1\n1,res18,0,100,1\n\n0,gnmt,5,100,1\n",
    );
    let e = err_of(synergy(p));
    assert!(
        e.contains("dup.csv:4:") && e.contains("job id 0 appears twice (first at line 1)"),
        "{e}"
    );
}

#[test]
fn a_job_wider_than_the_cluster_names_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "wide.csv", "0,res18,0,100,1\n1,res18,0,100,129\n");
    let e = err_of(synergy(p));
    assert!(
        e.contains("wide.csv:2:") && e.contains("job 1 asks for 129 GPUs"),
        "{e}"
    );
}

#[test]
fn philly_dates_out_of_range_are_errors_not_overflows() {
    let d = tempfile::tempdir().unwrap();
    for (i, ts) in [
        "9223372036854775807-01-01 00:00:00",
        "2017-10-09 1e300:00:00",
        "2017-10-09 00:00:inf",
    ]
    .iter()
    .enumerate()
    {
        let p = write(
            d.path(),
            &format!("p{i}.csv"),
            &format!(
                "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,60,1,60,x\n{ts},60,1,60,x\n"
            ),
        );
        let e = err_of(ReplayOptions {
            workload: WorkloadSpec::PhillyCsv(p),
            ..Default::default()
        });
        assert!(
            e.contains(&format!("p{i}.csv:3:")) && e.contains("timestamp"),
            "{e}"
        );
    }
    let p = write(
        d.path(),
        "dur.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,1e300,1,60,x\n",
    );
    let e = err_of(ReplayOptions {
        workload: WorkloadSpec::PhillyCsv(p),
        ..Default::default()
    });
    assert!(e.contains("dur.csv:2:") && e.contains("duration"), "{e}");
}

#[test]
fn alibaba_non_finite_values_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let head = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
    for (i, row) in [
        "p,NaN,1024,1,1000,V100,LS,Running,0,100,10",
        "p,1000,inf,1,1000,V100,LS,Running,0,100,10",
        "p,1000,1024,1,1000,V100,LS,Running,-1e300,100,10",
        "p,1000,1024,1,1000,V100,LS,Running,0,1e300,10",
    ]
    .iter()
    .enumerate()
    {
        let p = write(d.path(), &format!("a{i}.csv"), &format!("{head}{row}\n"));
        let e = err_of(ReplayOptions {
            workload: WorkloadSpec::Alibaba(p),
            ..Default::default()
        });
        assert!(e.contains(&format!("a{i}.csv:2:")), "{e}");
    }
}

#[test]
fn an_overlong_line_is_an_error_at_its_line() {
    let d = tempfile::tempdir().unwrap();
    let long = "9".repeat(2 << 20);
    let p = write(d.path(), "long.csv", &format!("0,res18,0,100,1\n{long}\n"));
    let e = err_of(synergy(p));
    assert!(
        e.contains("long.csv:2:") && e.contains("longer than"),
        "{e}"
    );
}

#[test]
fn rounds_and_rates_are_bounded() {
    // A 1e-300 s round used to spin for ~forever.
    let e = err_of(ReplayOptions {
        round_s: 1e-300,
        ..Default::default()
    });
    assert!(e.contains("round length"), "{e}");
    let e = err_of(ReplayOptions {
        round_s: 1.0,
        horizon_s: 1e10,
        ..Default::default()
    });
    assert!(e.contains("rounds"), "{e}");
    // Synthetic parameters.
    assert!(DurationDist::parse("fixed:1e300").is_err());
    assert!(DurationDist::parse("loguniform:1,400").is_err());
    assert!(DurationDist::parse("exp:1e12").is_err());
    assert!(profiler::replay::workload::synthetic::parse_gpu_demand("1:1e308,2:1e308").is_err());
    let e = err_of(ReplayOptions {
        workload: WorkloadSpec::Synthetic(profiler::replay::workload::synthetic::SyntheticSpec {
            jobs_per_hour: 1e-300,
            max_jobs: Some(10),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert!(e.contains("--jobs-per-hour"), "{e}");
    let e = err_of(ReplayOptions {
        workload: WorkloadSpec::Synthetic(profiler::replay::workload::synthetic::SyntheticSpec {
            max_jobs: Some(u64::MAX),
            ..Default::default()
        }),
        ..Default::default()
    });
    assert!(e.contains("too large"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let e = err_of(ReplayOptions {
        split: [1e308, 1e308, 1e308],
        workload: WorkloadSpec::PhillyCsv(write(
            d.path(),
            "s.csv",
            "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:00,60,1,60,x\n",
        )),
        ..Default::default()
    });
    assert!(e.contains("split"), "{e}");
}

#[test]
fn an_empty_trace_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let e = err_of(synergy(write(d.path(), "empty.csv", "\n\n")));
    assert!(e.contains("empty.csv:1:") && e.contains("no jobs"), "{e}");
}

#[test]
fn philly_json_errors_name_the_line_where_the_job_starts() {
    let job = |gpus: usize| {
        let g = vec!["\"gpu0\""; gpus].join(", ");
        format!(
            "  {{\n    \"submitted_time\": \"2017-10-09 07:00:00\",\n    \"attempts\": [{{\"start_time\": \"2017-10-09 07:00:00\", \"end_time\": \"2017-10-09 08:00:00\",\n      \"detail\": [{{\"gpus\": [{g}]}}]}}]\n  }}"
        )
    };
    // Job 1 on lines 2-6, job 2 (160 GPUs, wider than the 128-GPU cluster) from line 7.
    let text = format!("[\n{},\n{}\n]\n", job(1), job(160));
    let d = tempfile::tempdir().unwrap();
    let e = err_of(ReplayOptions {
        workload: WorkloadSpec::PhillyJson(write(d.path(), "log.json", &text)),
        ..Default::default()
    });
    assert!(e.contains("log.json:7:") && e.contains("160 GPUs"), "{e}");
}
