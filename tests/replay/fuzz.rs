//! Fuzzing of every replay entry point a user feeds: the trace adapters (canonical, Synergy CSV,
//! Philly CSV and JSON, Alibaba), the synthetic workload's parameters, cluster TOML and
//! `--cluster` strings, scenario grid files, and the replay's command-line values.
//!
//! Inputs are mostly valid (so they get past headers and into the row checks) with mutated
//! fields (NaN, infinities, huge and negative numbers, overflowing integers, odd text) and
//! byte-level mutations (deleted, inserted or replaced bytes, invalid UTF-8, truncation).
//! Every case asserts: no panic, a bounded parse time, errors that name the file and a line of
//! it, and, when the input is accepted, jobs and clusters within the replay's bounds.
//!
//! Cases per entry point: `PROFILER_FUZZ_CASES` (or proptest's `PROPTEST_CASES`), 256 by
//! default. A long run, with the counts printed:
//! `PROFILER_FUZZ_CASES=100000 cargo test --release --test replay fuzz -- --nocapture`

use clap::Parser;
use profiler::cli::replay::{ReplayArgs, parse_horizon, parse_split, parse_window};
use profiler::replay::bounds;
use profiler::replay::cluster::ClusterSpec;
use profiler::replay::job::JobSpec;
use profiler::replay::profile::{ProfileSet, Semantics};
use profiler::replay::workload::synthetic::{
    DurationDist, Synthetic, SyntheticSpec, parse_gpu_demand,
};
use profiler::replay::workload::{self, Assigner, Binder, WideJobs};
use profiler::replay::{ReplayError, check_options};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::Path;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

static ZOO: LazyLock<ProfileSet> = LazyLock::new(ProfileSet::builtin_zoo);

/// Longest a single parse may take (debug build, loaded machine); real ones take microseconds.
const MAX_CASE_TIME: Duration = Duration::from_secs(5);

fn cases() -> u32 {
    ["PROFILER_FUZZ_CASES", "PROPTEST_CASES"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(256)
}

/// Runs `test` on `cases()` inputs of `strategy` (`Ok(true)`: the input was accepted), then
/// prints how many ran and how many were accepted.
fn fuzz<S: Strategy>(
    name: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<bool, TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let accepted = std::sync::atomic::AtomicU64::new(0);
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    let started = Instant::now();
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |v| {
        if test(v)? {
            accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
    eprintln!(
        "fuzz {name}: {} cases ({} accepted, the rest errors with file and line where there is \
         one), no panic, no hang, {:.1} s",
        cases(),
        accepted.into_inner(),
        started.elapsed().as_secs_f64()
    );
}

/// Values that break naive parsers.
fn nasty() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "", " ", "nan", "NaN", "inf", "-inf", "infinity", "-0", "-1", "0", "1e300", "-1e300",
            "1e-300", "1e308", "1.8e308", "18446744073709551615", "18446744073709551616",
            "4294967295", "4294967296", "9223372036854775807", "-9223372036854775808", "1e15",
            "1e16", "0x10", "+5", " 7 ", "1_000", "é", "\u{0}", "\"", ",", ":", "..", "=",
            "1e", ".", "--", "\u{feff}1", "٣",
        ])
        .prop_map(String::from),
        1 => "[ -~]{0,12}",
        1 => "\\PC{0,6}",
    ]
    .boxed()
}

/// Mostly `good`, sometimes nasty.
fn f(good: impl Strategy<Value = String> + 'static) -> BoxedStrategy<String> {
    prop_oneof![40 => good, 1 => nasty()].boxed()
}

/// Job ids: mostly distinct (from a wide range), sometimes small enough to repeat.
fn job_id() -> BoxedStrategy<String> {
    f(prop_oneof![20 => 0u64..1_000_000_000, 1 => 0u64..4].prop_map(|x| x.to_string()))
}

/// GPUs of a job: mostly fitting the 8-GPU servers of the fuzzing, sometimes wider.
fn job_gpus() -> BoxedStrategy<String> {
    f(prop_oneof![20 => 1u32..9, 1 => 9u32..64].prop_map(|x| x.to_string()))
}

fn int(lo: u64, hi: u64) -> BoxedStrategy<String> {
    f((lo..hi).prop_map(|x| x.to_string()))
}

fn float(lo: f64, hi: f64) -> BoxedStrategy<String> {
    f(prop_oneof![
        (lo..hi).prop_map(|x| x.to_string()),
        ((lo as i64)..(hi as i64).max(lo as i64 + 1)).prop_map(|x| x.to_string()),
    ])
}

fn model() -> BoxedStrategy<String> {
    f(prop_oneof![
        30 => prop::sample::select(vec![
            "res18", "resnet18", "res50", "gnmt", "alexnet", "lstm", "deepspeech", "shufflenet",
            "transformer", "mobilenet",
        ]),
        1 => Just("nosuchmodel"),
    ]
    .prop_map(String::from))
}

/// `YYYY-MM-DD HH:MM:SS`, each part mostly valid, sometimes nasty (huge years, `1e300` hours).
fn datetime() -> BoxedStrategy<String> {
    let part = |lo: u32, hi: u32| f((lo..hi).prop_map(|x| format!("{x:02}")));
    f((
        part(2017, 2019),
        part(1, 13),
        part(1, 29),
        part(0, 24),
        part(0, 60),
        part(0, 60),
    )
        .prop_map(|(y, mo, d, h, mi, s)| format!("{y}-{mo}-{d} {h}:{mi}:{s}")))
}

/// Byte-level mutations of a text: (position, operation, byte).
fn mutations() -> BoxedStrategy<Vec<(prop::sample::Index, u8, u8)>> {
    prop_oneof![
        4 => Just(vec![]),
        1 => prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<u8>()), 1..4),
    ]
    .boxed()
}

fn mutate(text: String, muts: &[(prop::sample::Index, u8, u8)]) -> Vec<u8> {
    let mut b = text.into_bytes();
    for (at, op, byte) in muts {
        let i = at.index(b.len() + 1);
        match op {
            0 if i < b.len() => {
                b.remove(i);
            }
            1 => b.insert(i, *byte),
            2 if i < b.len() => b[i] = *byte,
            3 => b.truncate(i),
            _ => {}
        }
    }
    b
}

/// A text of `rows` under an optional header (mostly the right one).
fn table(header: Option<&'static str>, row: BoxedStrategy<String>) -> BoxedStrategy<Vec<u8>> {
    let head: BoxedStrategy<String> = match header {
        Some(h) => prop_oneof![12 => Just(h.to_owned()), 1 => nasty()].boxed(),
        None => Just(String::new()).boxed(),
    };
    (
        head,
        prop::collection::vec(row, 0..12),
        any::<bool>(),
        mutations(),
    )
        .prop_map(move |(h, rows, blank, muts)| {
            let mut lines = Vec::new();
            if header.is_some() {
                lines.push(h);
            }
            lines.extend(rows);
            if blank && lines.len() > 1 {
                lines.insert(1, String::new());
            }
            mutate(lines.join("\n") + "\n", &muts)
        })
        .boxed()
}

/// Line count of an input, for the bound on the line an error may name.
fn line_count(bytes: &[u8]) -> usize {
    1 + bytes.iter().filter(|&&b| b == b'\n').count()
}

/// The error names the file and a line in `1..=max_line`.
fn names_file_and_line(e: &ReplayError, path: &Path, max_line: usize) -> Result<(), TestCaseError> {
    let text = e.to_string();
    let prefix = format!("{}:", path.display());
    prop_assert!(text.starts_with(&prefix), "no file in {text:?}");
    let line: usize = text[prefix.len()..]
        .split(':')
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| TestCaseError::fail(format!("no line in {text:?}")))?;
    prop_assert!(
        (1..=max_line).contains(&line),
        "line {line} not in 1..={max_line}: {text:?}"
    );
    Ok(())
}

/// Accepted jobs are within the replay's bounds, sorted by arrival, with unique ids.
fn jobs_in_bounds(jobs: &[JobSpec], max_gpus: u32) -> Result<(), TestCaseError> {
    let mut ids = std::collections::HashSet::new();
    for w in jobs.windows(2) {
        prop_assert!(w[0].arrival_s <= w[1].arrival_s);
    }
    for j in jobs {
        prop_assert!(ids.insert(j.id), "duplicate id {}", j.id);
        prop_assert!((0.0..=bounds::MAX_TIME_S).contains(&j.arrival_s), "{j:?}");
        prop_assert!(j.work_samples > 0.0 && j.work_samples <= bounds::MAX_WORK_SAMPLES);
        prop_assert!(j.gpus >= 1 && j.gpus <= max_gpus, "{j:?}");
        for r in [j.cpu_request, j.mem_request_gb].into_iter().flatten() {
            prop_assert!(r.is_finite() && r >= 0.0);
        }
        prop_assert!(ZOO.lookup(&j.model).is_some());
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Adapter {
    Canonical,
    SynergyCsv,
    PhillyCsv,
    PhillyJson,
    Alibaba,
}

/// Writes `bytes` to a file and reads it with `adapter`, checking the outcome.
fn check_trace(
    dir: &Path,
    adapter: Adapter,
    bytes: &[u8],
    skip_wide: bool,
) -> Result<bool, TestCaseError> {
    let path = dir.join("trace.txt");
    std::fs::write(&path, bytes).unwrap();
    let max_gpus = 8;
    let wide = if skip_wide {
        WideJobs::Skip
    } else {
        WideJobs::Error
    };
    let mut binder = Binder::new(&ZOO, max_gpus, path.clone(), wide);
    let mut assign =
        Assigner::new(&ZOO, [20.0, 70.0, 10.0], 1, (3.0, 62.5), Semantics::Exact).unwrap();
    let started = Instant::now();
    let r = match adapter {
        Adapter::Canonical => workload::canonical::read(&path, &mut binder),
        Adapter::SynergyCsv => workload::synergy_csv::read(&path, &mut binder),
        Adapter::PhillyCsv => workload::philly::read_csv(&path, &mut binder, &mut assign),
        Adapter::PhillyJson => workload::philly::read_json(&path, &mut binder, &mut assign),
        Adapter::Alibaba => workload::alibaba::read(&path, &mut binder, &mut assign),
    };
    prop_assert!(
        started.elapsed() < MAX_CASE_TIME,
        "slow: {:?}",
        started.elapsed()
    );
    match r {
        Ok(jobs) => jobs_in_bounds(&jobs, max_gpus).map(|()| true),
        Err(e) => names_file_and_line(&e, &path, line_count(bytes)).map(|()| false),
    }
}

fn fuzz_trace(name: &str, adapter: Adapter, input: BoxedStrategy<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    fuzz(name, (input, any::<bool>()), |(bytes, skip)| {
        check_trace(dir.path(), adapter, &bytes, skip)
    });
}

#[test]
fn fuzz_canonical_trace() {
    let opt = |lo, hi| {
        f(prop_oneof![
            Just(String::new()),
            (lo..hi).prop_map(|x: f64| x.to_string())
        ])
    };
    let row = (
        job_id(),
        model(),
        float(0.0, 1e6),
        job_gpus(),
        float(1.0, 1e9),
        opt(0.0, 64.0),
        opt(0.0, 512.0),
    )
        .prop_map(|(a, b, c, d, e, g, h)| [a, b, c, d, e, g, h].join(","))
        .boxed();
    let head = format!(
        "{}\n{}",
        workload::canonical::MAGIC,
        workload::canonical::COLUMNS
    );
    let head: &'static str = Box::leak(head.into_boxed_str());
    fuzz_trace("canonical", Adapter::Canonical, table(Some(head), row));
}

#[test]
fn fuzz_synergy_csv_trace() {
    let row = (
        job_id(),
        model(),
        float(0.0, 1e6),
        float(1.0, 1e6),
        job_gpus(),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e].join(","))
        .boxed();
    fuzz_trace("synergy-csv", Adapter::SynergyCsv, table(None, row));
}

#[test]
fn fuzz_philly_csv_trace() {
    let row = (
        datetime(),
        float(0.0, 1e6),
        job_gpus(),
        float(0.0, 1e7),
        f("[a-z]{1,6}".prop_map(String::from)),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e].join(","))
        .boxed();
    fuzz_trace(
        "philly-csv",
        Adapter::PhillyCsv,
        table(Some("timestamp,duration,num_gpus,gpu_time,cluster"), row),
    );
}

#[test]
fn fuzz_philly_json_trace() {
    use serde_json::{Value, json};
    let time = || {
        prop_oneof![
            8 => datetime().prop_map(Value::String),
            1 => Just(Value::Null),
            1 => any::<f64>().prop_map(|x| json!(x)),
        ]
    };
    let attempt = (
        time(),
        time(),
        prop::collection::vec(prop::collection::vec("[a-z0-9]{1,4}", 0..10), 0..3),
    )
        .prop_map(|(s, e, detail)| {
            json!({"start_time": s, "end_time": e,
                   "detail": detail.into_iter().map(|g| json!({"ip": "m", "gpus": g})).collect::<Vec<_>>()})
        });
    let job = (time(), prop::collection::vec(attempt, 0..3), "[a-z]{0,4}")
        .prop_map(|(t, a, id)| json!({"jobid": id, "submitted_time": t, "attempts": a}));
    let input = (
        prop::collection::vec(job, 0..12),
        any::<bool>(),
        mutations(),
    )
        .prop_map(|(jobs, pretty, muts)| {
            let v = Value::Array(jobs);
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                v.to_string()
            };
            mutate(text, &muts)
        })
        .boxed();
    fuzz_trace("philly-json", Adapter::PhillyJson, input);
}

#[test]
fn fuzz_alibaba_trace() {
    let row = (
        (
            f("[a-z0-9-]{1,8}".prop_map(String::from)),
            float(0.0, 96000.0),
            float(0.0, 500000.0),
            job_gpus(),
        ),
        (
            int(0, 1001),
            f(prop::sample::select(vec!["V100M16", "T4", "A10", ""]).prop_map(String::from)),
            f(Just("LS".to_string())),
            f(Just("Running".to_string())),
        ),
        (
            float(0.0, 1e7),
            f(prop_oneof![
                Just(String::new()),
                (0.0f64..1e7).prop_map(|x| x.to_string())
            ]),
            f(prop_oneof![
                Just(String::new()),
                (0.0f64..1e7).prop_map(|x| x.to_string())
            ]),
        ),
    )
        .prop_map(|((a, b, c, d), (e, g, h, i), (j, k, l))| {
            [a, b, c, d, e, g, h, i, j, k, l].join(",")
        })
        .boxed();
    fuzz_trace(
        "alibaba",
        Adapter::Alibaba,
        table(
            Some(
                "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time",
            ),
            row,
        ),
    );
}

/// Synthetic arrival parameters: parsed from their option strings, then up to 64 jobs drawn.
#[test]
fn fuzz_synthetic_parameters() {
    let duration = f(prop_oneof![
        Just("synergy".to_string()),
        (0.0f64..1e4).prop_map(|m| format!("fixed:{m}")),
        (0.0f64..1e4).prop_map(|m| format!("exp:{m}")),
        (0.0f64..4.0, 0.0f64..2.0).prop_map(|(a, k)| format!("loguniform:{a},{}", a + k)),
        nasty().prop_map(|x| format!("fixed:{x}")),
        (nasty(), nasty()).prop_map(|(a, b)| format!("loguniform:{a},{b}")),
    ]);
    let demand = f(
        prop::collection::vec((job_gpus(), float(0.0, 10.0)), 1..4).prop_map(|v| {
            v.into_iter()
                .map(|(g, w)| format!("{g}:{w}"))
                .collect::<Vec<_>>()
                .join(",")
        }),
    );
    let split = f(prop_oneof![
        8 => prop::collection::vec(float(1.0, 100.0), 3..4),
        1 => prop::collection::vec(float(0.0, 100.0), 0..5),
    ]
    .prop_map(|v| v.join(",")));
    let rate = prop_oneof![
        8 => 0.0f64..100.0,
        1 => prop::sample::select(vec![0.0, -1.0, 1e-300, 1e-7, 1e300, f64::NAN, f64::INFINITY, 2e6]),
    ];
    let jobs = prop_oneof![
        6 => (0u64..64).prop_map(Some),
        1 => Just(None),
        1 => Just(Some(u64::MAX)),
    ];
    fuzz(
        "synthetic",
        (duration, demand, split, rate, any::<u64>(), jobs),
        |(duration, demand, split, rate, seed, max_jobs)| {
            let started = Instant::now();
            let (Ok(duration), Ok(gpu_demand), Ok(split)) = (
                DurationDist::parse(&duration),
                parse_gpu_demand(&demand),
                parse_split(&split),
            ) else {
                return Ok(false);
            };
            let spec = SyntheticSpec {
                jobs_per_hour: rate,
                duration,
                gpu_demand,
                split,
                seed,
                max_jobs,
            };
            let generator = Synthetic::new(&spec, &ZOO, (3.0, 62.5), 8, Semantics::Exact);
            let accepted = generator.is_ok();
            if let Ok(generator) = generator {
                let jobs: Vec<JobSpec> = generator.take(64).collect();
                for w in jobs.windows(2) {
                    prop_assert!(w[0].arrival_s <= w[1].arrival_s);
                }
                for j in &jobs {
                    prop_assert!(j.arrival_s.is_finite() && j.arrival_s >= 0.0, "{j:?}");
                    prop_assert!(j.work_samples.is_finite() && j.work_samples > 0.0, "{j:?}");
                    prop_assert!((1..=8).contains(&j.gpus));
                }
            }
            prop_assert!(started.elapsed() < MAX_CASE_TIME);
            Ok(accepted)
        },
    );
}

fn check_cluster(spec: Result<ClusterSpec, ReplayError>) -> Result<bool, TestCaseError> {
    let accepted = spec.is_ok();
    if let Ok(spec) = spec {
        // A spec that resolves builds, within the bounds (no allocation beyond them).
        let c = spec
            .build()
            .map_err(|e| TestCaseError::fail(format!("resolved but does not build: {e}")))?;
        prop_assert!(c.servers.len() as u64 <= bounds::MAX_SERVERS);
        prop_assert!(c.total_gpus > 0 && c.total_cpus.is_finite() && c.total_mem_gb.is_finite());
    }
    Ok(accepted)
}

#[test]
fn fuzz_cluster_toml() {
    let key = |k: &'static str, v: BoxedStrategy<String>| prop_oneof![12 => v.prop_map(move |v| format!("{k} = {v}\n")), 1 => Just(String::new())];
    let group = (
        key("count", int(1, 200)),
        key("gpus", int(1, 17)),
        key("cpus", float(1.0, 256.0)),
        key("memory_gb", float(1.0, 4096.0)),
        prop_oneof![4 => Just(String::new()), 1 => key("storage_mb_per_s", float(0.0, 1e4)).boxed()],
        prop_oneof![2 => Just(String::new()), 1 => "[a-z]{0,6}".prop_map(|n| format!("name = \"{n}\"\n"))],
    )
        .prop_map(|(a, b, c, d, e, g)| format!("[[group]]\n{g}{a}{b}{c}{d}{e}"));
    let input = (
        prop_oneof![
            Just(String::new()),
            "[a-z]{0,6}".prop_map(|n| format!("name = \"{n}\"\n"))
        ],
        prop::collection::vec(group, 0..5),
        mutations(),
    )
        .prop_map(|(name, groups, muts)| mutate(name + &groups.concat(), &muts));
    let path = Path::new("cluster.toml");
    fuzz("cluster-toml", input, |bytes| {
        let Ok(text) = String::from_utf8(bytes.clone()) else {
            return Ok(false);
        };
        let started = Instant::now();
        let spec = ClusterSpec::from_toml(&text, path);
        if let Err(e) = &spec {
            names_file_and_line(e, path, line_count(&bytes))?;
        }
        let accepted = check_cluster(spec)?;
        prop_assert!(started.elapsed() < MAX_CASE_TIME);
        Ok(accepted)
    });
}

#[test]
fn fuzz_cluster_names() {
    let name = prop_oneof![
        prop::sample::select(vec!["synergy-default", "synergy-deploy"]).prop_map(String::from),
        "synergy-[0-9]{0,25}",
        "synergy--?[0-9]{1,12}",
        nasty().prop_map(|x| format!("synergy-{x}")),
        "[a-z0-9-]{0,16}",
    ];
    fuzz("cluster-name", name, |name| {
        let started = Instant::now();
        let accepted = check_cluster(ClusterSpec::resolve(&name))?;
        prop_assert!(started.elapsed() < MAX_CASE_TIME);
        Ok(accepted)
    });
}

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    replay: ReplayArgs,
}

/// The replay's command-line values, through clap and `to_options` as the binary does, then
/// the option checks `run` starts with.
#[test]
fn fuzz_cli_values() {
    let window = f(prop_oneof![
        8 => (0u64..10000, 0u64..10000).prop_map(|(a, k)| format!("{a}..{}", a + k)),
        1 => (0u64..10000, 0u64..10000).prop_map(|(a, b)| format!("{a}..{b}")),
        1 => (nasty(), nasty()).prop_map(|(a, b)| format!("{a}..{b}")),
        1 => (0u64..10, nasty()).prop_map(|(a, b)| format!("{a}..={b}")),
    ]);
    let horizon = f(prop_oneof![
        (
            1u32..1000,
            prop::sample::select(vec!["", "s", "m", "h", "d", "w", "y"])
        )
            .prop_map(|(n, u)| format!("{n}{u}")),
        nasty().prop_map(|x| format!("{x}d")),
    ]);
    let round = float(1.0, 3600.0);
    let split = f(prop::collection::vec(float(1.0, 100.0), 3..4).prop_map(|v| v.join(",")));
    let rate = float(0.0, 100.0);
    let cluster = prop_oneof![
        4 => Just("synergy-default".to_string()),
        1 => "synergy-[0-9]{0,12}",
        1 => nasty(),
    ];
    let jobs = int(0, 10000);
    fuzz(
        "cli",
        ((window, horizon, round), (split, rate, cluster, jobs)),
        |((window, horizon, round), (split, rate, cluster, jobs))| {
            let started = Instant::now();
            let args = [
                "replay".to_string(),
                format!("--window={window}"),
                format!("--horizon={horizon}"),
                format!("--round-s={round}"),
                format!("--split={split}"),
                format!("--jobs-per-hour={rate}"),
                format!("--cluster={cluster}"),
                format!("--jobs={jobs}"),
            ];
            let Ok(cli) = Cli::try_parse_from(&args) else {
                return Ok(false);
            };
            // The same values through the parse functions directly.
            let _ = (parse_window(&window), parse_horizon(&horizon));
            let opts = cli.replay.to_options();
            let accepted = opts.as_ref().is_ok_and(|o| check_options(o).is_ok());
            if let Ok(opts) = opts
                && accepted
            {
                prop_assert!(opts.round_s.is_finite() && opts.round_s > 0.0);
                prop_assert!(opts.horizon_s.is_finite() && opts.horizon_s > 0.0);
                prop_assert!(opts.horizon_s / opts.round_s <= bounds::MAX_HORIZON_ROUNDS);
                if let Some((a, b)) = opts.window {
                    prop_assert!(a <= b && b <= bounds::MAX_JOB_ID);
                }
                check_cluster(Ok(opts.cluster.clone()))?;
            }
            prop_assert!(started.elapsed() < MAX_CASE_TIME);
            Ok(accepted)
        },
    );
}

/// Elastic traces (ONES's trace, Pollux's workloads): fewer cases by default (64), since each
/// case also checks every accepted job against the calibrated table.
mod elastic {
    use super::*;
    use profiler::replay::elastic::job::ElasticJobSpec;
    use profiler::replay::elastic::model::calibration::{Calibration, POLLUX_APPS};
    use profiler::replay::elastic::workload::{ones, pollux};

    fn elastic_cases() -> u32 {
        ["PROFILER_FUZZ_CASES", "PROPTEST_CASES"]
            .iter()
            .find_map(|v| std::env::var(v).ok()?.parse().ok())
            .unwrap_or(64)
    }

    fn jobs_ok(jobs: &[ElasticJobSpec], cal: &Calibration) -> Result<(), TestCaseError> {
        for w in jobs.windows(2) {
            prop_assert!(w[0].arrival_s <= w[1].arrival_s);
        }
        for (i, j) in jobs.iter().enumerate() {
            prop_assert_eq!(j.id, i as u64);
            prop_assert!((0.0..=bounds::MAX_TIME_S).contains(&j.arrival_s), "{j:?}");
            prop_assert!(
                j.work() > 0.0 && j.work() <= bounds::MAX_WORK_SAMPLES,
                "{j:?}"
            );
            prop_assert!(j.requested_gpus >= 1, "{j:?}");
            prop_assert!(j.base_batch >= 1 && j.min_batch <= j.max_batch, "{j:?}");
            prop_assert!(
                j.epoch_samples.is_finite() && j.epoch_samples > 0.0,
                "{j:?}"
            );
            prop_assert!(cal.app_models().get(&j.app).is_some(), "{j:?}");
            for g in [1, 2, 7, 64] {
                let b = j.rule_batch(g).unwrap();
                prop_assert!(j.min_batch <= b && b <= j.max_batch, "{j:?}");
            }
        }
        Ok(())
    }

    fn run(name: &str, input: BoxedStrategy<Vec<u8>>, ones_format: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.csv");
        let cal = Calibration::builtin();
        let config = Config {
            cases: elastic_cases(),
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let accepted = std::sync::atomic::AtomicU64::new(0);
        let result = runner.run(&input, |bytes| {
            std::fs::write(&path, &bytes).unwrap();
            let started = Instant::now();
            let r = if ones_format {
                ones::read(&path, cal)
            } else {
                pollux::read(&path, cal)
            };
            prop_assert!(started.elapsed() < MAX_CASE_TIME);
            match r {
                Ok(jobs) => {
                    accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    jobs_ok(&jobs, cal)
                }
                Err(e) => names_file_and_line(&e, &path, line_count(&bytes)),
            }
        });
        if let Err(e) = result {
            panic!("fuzz {name}: {e}");
        }
        eprintln!(
            "fuzz {name}: {} cases ({} accepted), no panic, no hang",
            elastic_cases(),
            accepted.into_inner()
        );
    }

    #[test]
    fn fuzz_ones_trace() {
        let types = prop::sample::select(vec![
            ("bert", "cola"),
            ("bert", "sst2"),
            ("resnet18", "cifar"),
            ("vgg16", "imagenet"),
            ("inception_v3", "imagenet"),
            ("resnet99", "cifar"),
        ]);
        let row = (
            float(0.0, 1e5),
            types,
            float(1.0, 1e6),
            int(0, 30),
            int(1, 512),
            float(1e-6, 0.01),
            float(1e-5, 0.1),
            float(0.0, 1.0),
            int(1, 64),
        )
            .prop_map(|(t, (m, k), n, p, b, lr, mlr, acc, g)| {
                [t, m.to_owned(), k.to_owned(), n, p, b, lr, mlr, acc, g].join(",")
            })
            .boxed();
        run("ones", table(Some(ones::HEADER), row), true);
    }

    #[test]
    fn fuzz_pollux_workload() {
        // Pollux's applications and one name that is not one.
        let mut names = POLLUX_APPS.to_vec();
        names.push("resnet");
        let apps = prop::sample::select(names);
        let row = (
            f("[a-z0-9-]{1,12}".boxed()),
            float(0.0, 1e6),
            apps,
            int(1, 64),
            int(1, 40000),
        )
            .prop_map(|(n, t, a, r, b)| [n, t, a.to_owned(), r, b].join(","))
            .boxed();
        run("pollux", table(Some(pollux::HEADER), row), false);
    }
}

#[test]
fn fuzz_grid_toml() {
    use profiler::replay::grid::{GridSpec, scenarios, spec::MAX_SCENARIOS};
    // Lists of 1..n values (sometimes none), mostly distinct.
    let list = |v: BoxedStrategy<String>, n: usize| {
        prop_oneof![
            20 => prop::collection::vec(v, 1..n),
            1 => Just(Vec::new()),
        ]
        .prop_map(|v| format!("[{}]", v.join(", ")))
    };
    let quoted = |v: BoxedStrategy<String>| v.prop_map(|s| format!("{s:?}")).boxed();
    let key = |k: &'static str, v: BoxedStrategy<String>| prop_oneof![12 => v.prop_map(move |v| format!("{k} = {v}\n")), 1 => Just(String::new())];
    let distinct = |names: Vec<&'static str>, bad: &'static str, n: usize| {
        prop_oneof![
            1 => Just(format!("[{bad:?}]")),
            20 => prop::sample::subsequence(names, 1..n).prop_map(|v| {
                let v: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
                format!("[{}]", v.join(", "))
            }),
            1 => list(quoted(nasty()), 3),
        ]
        .boxed()
    };
    let cluster = distinct(
        vec!["synergy-1", "synergy-deploy", "c.toml"],
        "synergy-0",
        3,
    );
    let scheme = distinct(
        vec!["fifo+tune", "srtf+opt", "las+proportional"],
        "x+tune",
        4,
    );
    let split = (float(0.0, 100.0), float(0.0, 100.0), float(0.0, 100.0))
        .prop_map(|(a, b, c)| format!("[{a}, {b}, {c}]"))
        .boxed();
    let axes = (
        key("clusters", cluster),
        key("loads", list(float(0.0, 20.0), 4).boxed()),
        key(
            "traces",
            list(quoted(f(Just("t.csv".to_owned()))), 2).boxed(),
        ),
        key("splits", list(split, 3).boxed()),
        key("seeds", list(int(0, 1_000_000), 4).boxed()),
        key("schemes", scheme),
    )
        .prop_map(|(a, b, c, d, e, g)| format!("{a}{b}{c}{d}{e}{g}"));
    let settings = (
        key("jobs", int(1, 1000)),
        key("window", quoted(f(Just("10..20".to_owned())))),
        key("round_s", float(0.0, 1000.0)),
        key("horizon", quoted(f(Just("30d".to_owned())))),
        key("semantics", quoted(f(Just("exact".to_owned())))),
        key("duration", quoted(f(Just("exp:60".to_owned())))),
        key("gpu_demand", quoted(f(Just("1:3,2:1".to_owned())))),
    )
        .prop_map(|(a, b, c, d, e, g, h)| format!("[settings]\n{a}{b}{c}{d}{e}{g}{h}"));
    let input = (axes, settings, mutations()).prop_map(|(a, s, muts)| mutate(a + &s, &muts));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), "0,resnet18,0,1000,1\n").unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "[[group]]\ncount = 2\ngpus = 8\ncpus = 24\nmemory_gb = 500\n",
    )
    .unwrap();
    let path = dir.path().join("grid.toml");
    fuzz("grid-toml", input, |bytes| {
        let Ok(text) = String::from_utf8(bytes.clone()) else {
            return Ok(false);
        };
        let started = Instant::now();
        let grid = GridSpec::parse(&text, &path);
        prop_assert!(started.elapsed() < MAX_CASE_TIME);
        match grid {
            Err(e) => {
                names_file_and_line(&e, &path, line_count(&bytes))?;
                Ok(false)
            }
            Ok(g) => {
                prop_assert!(g.len() as u64 <= MAX_SCENARIOS && !g.is_empty());
                let all = scenarios(&g);
                prop_assert_eq!(all.len(), g.len());
                let ids: std::collections::BTreeSet<&str> =
                    all.iter().map(|s| s.id.as_str()).collect();
                prop_assert_eq!(ids.len(), all.len(), "scenario ids collide");
                Ok(true)
            }
        }
    });
}
