use super::*;
use crate::matrix::fixtures::{header, measured};
use crate::matrix::{Axes, CellSource, Matrix, Throughput};

const GIB: u64 = 1 << 30;

/// Two CPU levels by two memory levels, every rate with an interval of its own.
fn matrix(name: &str) -> Matrix {
    let mut h = header(name);
    h.job.gpus = 1;
    h.axes = Axes {
        cpu: vec![1.0, 4.0],
        memory_bytes: vec![GIB, 4 * GIB],
        params: Default::default(),
    };
    let cell = |cpu: f64, mem: u64, rate: f64, half: f64| {
        let mut c = measured(cpu, mem, rate, None);
        c.throughput = Some(Throughput {
            samples_per_s: rate,
            ci95_low: rate - half,
            ci95_high: rate + half,
            windows: 8,
            measured_s: 8.0,
            launches: Vec::new(),
        });
        c
    };
    let mut modelled = cell(4.0, GIB, 300.0, 0.0);
    modelled.source = CellSource::Modelled;
    Matrix {
        header: h,
        cells: vec![
            cell(1.0, GIB, 100.0, 5.0),
            cell(1.0, 4 * GIB, 120.0, 6.0),
            modelled,
            cell(4.0, 4 * GIB, 400.0, 40.0),
        ],
    }
}

fn options(dir: &Path) -> ReportOptions {
    ReportOptions {
        out_dir: dir.to_owned(),
        server: ServerShape {
            cpus: 8.0,
            gpus: 2,
            mem_gb: 16.0,
        },
        eps: 0.02,
        weights: CostWeights::default(),
    }
}

/// The `data-NAME` values of the rows of the cells table, in order.
fn data(html: &str, name: &str) -> Vec<f64> {
    let key = format!("data-{name}=\"");
    html.match_indices(&key)
        .map(|(i, _)| {
            let rest = &html[i + key.len()..];
            rest[..rest.find('"').unwrap()].parse().unwrap()
        })
        .collect()
}

#[test]
fn a_page_keeps_every_cell_s_rate_and_interval_and_the_demand() {
    let dir = tempfile::tempdir().unwrap();
    let m = matrix("job");
    let (html, summary) = matrix_page::matrix_page(
        Path::new("job.matrix.jsonl"),
        &m,
        "job",
        &options(dir.path()),
    )
    .unwrap();
    let rates: Vec<f64> = m.cells.iter().map(|c| c.samples_per_s().unwrap()).collect();
    assert_eq!(data(&html, "rate"), rates);
    assert_eq!(data(&html, "low"), vec![95.0, 114.0, 300.0, 360.0]);
    assert_eq!(data(&html, "high"), vec![105.0, 126.0, 300.0, 440.0]);
    // The best case is the 4-CPU, 4 GiB cell: nothing else comes within 2% of 400.
    assert_eq!(data(&html, "cpus-per-gpu"), vec![4.0]);
    assert_eq!(summary.cpus_per_gpu, Some(4.0));
    // The widest measured interval is ±10% (400 ± 40); the modelled cell's is not counted.
    assert_eq!(summary.worst_half_width_pct, Some(10.0));
    assert_eq!((summary.measured, summary.cells), (3, 4));
    assert!(html.contains("<svg"), "the charts are inline");
    assert!(html.contains("class=\"modelled\""));
}

#[test]
fn several_matrices_get_an_index_linking_each_page() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    for name in ["a", "b"] {
        let path = inputs.join(format!("{name}.matrix.jsonl"));
        std::fs::write(&path, matrix(name).to_jsonl()).unwrap();
    }
    let out = dir.path().join("out");
    let mut seen = Vec::new();
    let written = write_report(&[inputs], &options(&out), &mut |k, n| seen.push((k, n))).unwrap();
    assert_eq!(seen, vec![(1, 2), (2, 2)]);
    assert_eq!(written[0], out.join("index.html"));
    let index = std::fs::read_to_string(&written[0]).unwrap();
    assert!(index.contains("href=\"a.html\"") && index.contains("href=\"b.html\""));
    assert_eq!(data(&index, "worst"), vec![10.0, 10.0]);
    assert!(out.join("a.html").exists() && out.join("b.html").exists());
}

#[test]
fn a_folder_without_matrices_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = write_report(
        &[dir.path().to_owned()],
        &options(dir.path()),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("no *.matrix.jsonl file"), "{err}");
}

/// A deploy's `--out` as `profiler deploy` writes it: the comparison, each side's jobs table
/// and the journal, for one scheme of two jobs; job 1 re-capped from 2 to 1 CPU.
fn deploy_out(dir: &Path, of_deploy: Option<crate::deploy::compare::OfDeploy>) {
    use crate::deploy::compare::{self, CompareRow};
    use crate::deploy::journal::{JobOutcome, RoundRecord};
    use crate::replay::metrics::JobRecord;
    use crate::replay::tables::{jobs_frame, write_table};
    compare::write(
        &[CompareRow {
            policy: "fifo".into(),
            mechanism: "tune".into(),
            jobs: 2,
            unfinished: 0,
            makespan: (110.0, 100.0),
            mean_jct: (80.0, 75.0),
            p99_jct: (110.0, 100.0),
            gain_over_proportional: Some((6.0, 7.0)),
            of_deploy,
        }],
        dir,
    )
    .unwrap();
    let job = |id: u64, finish: f64| JobRecord {
        id,
        model: "decode".into(),
        gpus: 1,
        arrival_s: 0.0,
        start_s: Some(0.0),
        finish_s: Some(finish),
        jct_s: Some(finish),
        queue_s: Some(0.0),
        alone_proportional_s: finish,
        alone_best_s: finish,
        ftf_rho: None,
        rounds_run: 2,
        gpu_s: finish,
        cpu_request: None,
        mem_request_gb: None,
        failure: None,
    };
    for (sub, finish) in [("", [50.0, 110.0]), ("replay", [50.0, 100.0])] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).unwrap();
        let mut df = jobs_frame(&[job(0, finish[0]), job(1, finish[1])]).unwrap();
        write_table(&mut df, &d, "fifo-tune.jobs").unwrap();
    }
    let outcome = |id: u64, ran_s: f64, cpus: f64, restarted: bool| JobOutcome {
        id,
        remaining: 0.0,
        ran_s,
        finish: None,
        failure: None,
        cpus: Some(cpus),
        mem_bytes: Some(GIB),
        restarted,
    };
    let rounds = [
        RoundRecord {
            t: 0.0,
            round_s: 60.0,
            jobs: vec![outcome(0, 50.0, 1.0, false), outcome(1, 30.0, 2.0, false)],
        },
        RoundRecord {
            t: 60.0,
            round_s: 20.0,
            jobs: vec![outcome(1, 20.0, 1.0, false)],
        },
        RoundRecord {
            t: 90.0,
            round_s: 20.0,
            jobs: vec![outcome(1, 20.0, 2.0, true)],
        },
    ];
    let header = crate::deploy::journal::JournalHeader {
        kind: "profiler-deploy-journal".into(),
        scheme: "fifo+tune".into(),
        round_s: 60.0,
        jobs: 2,
        work_samples: 1000.0,
        last_arrival_s: 0.0,
    };
    let journal: String = std::iter::once(serde_json::to_string(&header).unwrap())
        .chain(rounds.iter().map(|r| serde_json::to_string(r).unwrap()))
        .map(|l| l + "\n")
        .collect();
    std::fs::create_dir_all(dir.join("journal")).unwrap();
    std::fs::write(dir.join("journal/fifo-tune.jsonl"), journal).unwrap();
}

#[test]
fn a_deploy_s_page_has_synergy_s_table_and_each_job_s_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("deploy");
    deploy_out(&run, None);
    let out = dir.path().join("out");
    let written = write_report(&[run], &options(&out), &mut |_, _| {}).unwrap();
    assert_eq!(written, vec![out.join("deploy.run.html")]);
    let html = std::fs::read_to_string(&written[0]).unwrap();
    assert_eq!(data(&html, "makespan-deploy"), vec![110.0]);
    assert_eq!(data(&html, "makespan-gap"), vec![10.0]);
    assert_eq!(data(&html, "gain-replay"), vec![7.0]);
    // Four bars (one a round each job ran); job 1 re-capped in place from 2 CPUs to 1 at 60 s,
    // then started again on 2 at 90 s. Both jobs arrive at 0 and run in the first round: no
    // queued span, and each a suspended span from there to its finish, under its bars.
    assert_eq!(html.matches("<title>t=").count(), 4);
    assert_eq!(html.matches("<line class=\"recap\"").count(), 1);
    assert_eq!(html.matches("<line class=\"restart\"").count(), 1);
    assert_eq!(html.matches("<rect class=\"queued\"").count(), 0);
    assert_eq!(html.matches("<rect class=\"suspended\"").count(), 2);
    assert!(html.contains("ran 50 s with 1 CPUs and 1.00 GiB"));
    // Without a replay of the deploy, nothing says where the gap comes from.
    assert!(!html.contains("Where the gap comes from"));
}

/// A deploy that replayed itself at its measured rates: the page splits each gap into the
/// engine's part and the matrices', and shows what was fed back.
#[test]
fn a_deploy_s_page_says_where_its_gap_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("deploy");
    let of_deploy = crate::deploy::compare::OfDeploy {
        makespan_s: 104.0,
        mean_jct_s: 78.0,
        restarts: 1,
        slips: 0,
    };
    deploy_out(&run, Some(of_deploy));
    std::fs::write(
        run.join("feedback.txt"),
        "light: 1 cell measured <0.25 CPUs>\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let written = write_report(&[run], &options(&out), &mut |_, _| {}).unwrap();
    let html = std::fs::read_to_string(&written[0]).unwrap();
    assert!(html.contains("Where the gap comes from"));
    // 110 deployed, 104 replayed at the measured rates, 100 replayed: 6% + 4% of the replay.
    assert_eq!(data(&html, "engine-makespan"), vec![6.0]);
    assert_eq!(data(&html, "matrices-makespan"), vec![4.0]);
    assert_eq!(data(&html, "restarts"), vec![1.0]);
    assert!(
        html.contains("light: 1 cell measured &lt;0.25 CPUs&gt;"),
        "escaped"
    );
}
