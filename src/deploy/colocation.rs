//! What a job kind's rate loses beside the others. A matrix is swept with the job alone on the
//! machine; a deploy runs the kinds side by side. Each kind runs alone at its grant, then every
//! kind at once, each at the same grant, on the backend a deploy runs its jobs on. The whole
//! alternation is made `repeats` times, so a slow spell of the host falls on both sides.
//! Every window's rate is written as it is measured; an interrupted measurement keeps them.

use super::backend::{Backend, DeployJob, Exit, Grant, Reported};
use super::catalog::Catalog;
use super::clock::{Clock, WallClock};
use super::error::DeployError;
use super::grants::least_loaded;
use super::local::LocalBackend;
use crate::replay::job::JobSpec;
use crate::stats::{mean_sd, t_975};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Seconds between two looks at the jobs' progress.
const POLL_S: f64 = 0.5;

/// A run's windows of one job: `(start, samples/s)`.
type Windows = Vec<(f64, f64)>;

/// One job kind and the grant it is measured at.
#[derive(Debug, Clone)]
pub struct Placed {
    pub job: DeployJob,
    pub grant: Grant,
}

/// How long each run is, and how often the alternation is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColocationOptions {
    /// Seconds each run starts with, left out: the job's start-up.
    pub warmup_s: f64,
    /// Seconds each run is measured after its warm-up.
    pub measure_s: f64,
    /// The windows the measured seconds are cut into, the intervals' units; at least the
    /// longest gap between a job's reports.
    pub window_s: f64,
    /// Times each kind is run alone and all of them together.
    pub repeats: u32,
}

impl Default for ColocationOptions {
    fn default() -> Self {
        ColocationOptions {
            warmup_s: 15.0,
            measure_s: 60.0,
            window_s: 5.0,
            repeats: 2,
        }
    }
}

/// A rate and its 95% interval, from windows' rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    /// The standard error of the mean.
    pub se: f64,
    pub windows: usize,
}

impl Estimate {
    /// The mean of `rates` with its standard error; `None` for fewer than two.
    pub fn of(rates: &[f64]) -> Option<Estimate> {
        (rates.len() >= 2).then(|| {
            let (mean, sd) = mean_sd(rates);
            Estimate {
                mean,
                se: sd / (rates.len() as f64).sqrt(),
                windows: rates.len(),
            }
        })
    }

    /// The 95% interval of the mean.
    pub fn interval(&self) -> [f64; 2] {
        let h = t_975(self.windows - 1) * self.se;
        [self.mean - h, self.mean + h]
    }
}

/// One kind's rate alone and beside the others.
#[derive(Debug, Clone, PartialEq)]
pub struct Colocated {
    pub model: String,
    pub cpus: f64,
    pub mem_bytes: u64,
    pub alone: Estimate,
    pub beside: Estimate,
}

impl Colocated {
    /// Beside over alone, with its 95% interval (the two means' log errors added; the fewer
    /// windows' degrees of freedom).
    pub fn ratio(&self) -> [f64; 3] {
        let (a, b) = (&self.alone, &self.beside);
        let r = b.mean / a.mean;
        let se_log = ((b.se / b.mean).powi(2) + (a.se / a.mean).powi(2)).sqrt();
        let h = t_975(a.windows.min(b.windows) - 1) * se_log;
        [r, r * (-h).exp(), r * h.exp()]
    }

    /// One line for the screen.
    pub fn describe(&self) -> String {
        let [al, ah] = self.alone.interval();
        let [bl, bh] = self.beside.interval();
        let [r, rl, rh] = self.ratio();
        format!(
            "{:<12} {:>5} CPUs {:>6.2} GB  alone {:>8.1} [{:.1}, {:.1}]  beside {:>8.1} [{:.1}, \
             {:.1}]  {:.2}x [{:.2}, {:.2}]",
            self.model,
            self.cpus,
            self.mem_bytes as f64 / crate::matrix::surface::BYTES_PER_GB,
            self.alone.mean,
            al,
            ah,
            self.beside.mean,
            bl,
            bh,
            r,
            rl,
            rh
        )
    }
}

/// A co-location measurement on this machine.
#[derive(Debug, Clone)]
pub struct ColocateOptions {
    /// Job specs, one per model (as a deploy reads them).
    pub jobs_dir: PathBuf,
    /// Each kind measured: its model, cores and memory bytes.
    pub kinds: Vec<(String, f64, u64)>,
    /// The profiler-owned parent cgroup the jobs' cgroups go under.
    pub cgroup_parent: String,
    /// Where `colocation.csv`, `colocation.txt` and the jobs' logs go.
    pub out_dir: PathBuf,
    pub measure: ColocationOptions,
}

/// Measures `opts.kinds` alone and beside each other in cgroups of this machine ([`measure`]),
/// and writes one line a kind to `colocation.txt`.
pub fn run_local(
    opts: &ColocateOptions,
    cancel: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<Colocated>, DeployError> {
    let catalog = Catalog::load(&opts.jobs_dir)?;
    let trace: Vec<JobSpec> = (opts.kinds.iter())
        .map(|(model, ..)| JobSpec {
            id: 0,
            model: model.clone(),
            arrival_s: 0.0,
            gpus: 1,
            work_samples: f64::INFINITY,
            cpu_request: None,
            mem_request_gb: None,
        })
        .collect();
    catalog.prepare(&trace)?;
    std::fs::create_dir_all(&opts.out_dir).map_err(DeployError::io(&opts.out_dir))?;
    let epoch = crate::harness::measure::job_output::now_unix_s();
    let mut clock = WallClock::starting_at(0.0);
    let mut backend = LocalBackend::open(&opts.cgroup_parent, opts.out_dir.join("logs"), epoch)?;
    let grants = grants_on(&opts.kinds, backend.cpus());
    let placed: Vec<Placed> = (trace.iter().zip(grants))
        .map(|(j, grant)| {
            let job = DeployJob {
                id: 0,
                model: j.model.clone(),
                work_samples: f64::INFINITY,
                spec: std::sync::Arc::clone(catalog.spec_of(&j.model).expect("prepared")),
            };
            Placed { job, grant }
        })
        .collect();
    let csv = opts.out_dir.join("colocation.csv");
    let found = measure(
        &mut backend,
        &mut clock,
        &placed,
        &opts.measure,
        &csv,
        cancel,
        say,
    )?;
    let lines: Vec<String> = found.iter().map(Colocated::describe).collect();
    let txt = opts.out_dir.join("colocation.txt");
    std::fs::write(&txt, lines.join("\n") + "\n").map_err(DeployError::io(&txt))?;
    Ok(found)
}

/// Gives each of `kinds` (`model`, cores, bytes) CPUs of `cpu_ids` as a deploy's server
/// would: ceil(cores) of them, the least loaded first, every kind's quota counted together.
pub fn grants_on(kinds: &[(String, f64, u64)], cpu_ids: &[u32]) -> Vec<Grant> {
    let mut load = vec![0.0; cpu_ids.len()];
    (kinds.iter())
        .map(|(_, cpus, mem_bytes)| Grant {
            server: 0,
            cpus: *cpus,
            cpu_ids: (least_loaded(&mut load, *cpus).into_iter())
                .map(|i| cpu_ids[i])
                .collect(),
            mem_bytes: *mem_bytes,
            gpus: 0,
            gpu_ids: Vec::new(),
        })
        .collect()
}

/// Measures every kind of `placed` alone and all of them together, `opts.repeats` times, on
/// `backend`; each window's rate goes to `csv` as it is measured, and `say` hears each run.
pub fn measure(
    backend: &mut dyn Backend,
    clock: &mut dyn Clock,
    placed: &[Placed],
    opts: &ColocationOptions,
    csv: &Path,
    cancel: &AtomicBool,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<Colocated>, DeployError> {
    let mut file = std::fs::File::create(csv).map_err(DeployError::io(csv))?;
    writeln!(
        file,
        "repeat,run,model,cpus,mem_bytes,window_start_s,samples_per_s"
    )
    .map_err(DeployError::io(csv))?;
    let mut alone: Vec<Vec<f64>> = vec![Vec::new(); placed.len()];
    let mut beside: Vec<Vec<f64>> = vec![Vec::new(); placed.len()];
    let mut next_id = 1;
    for repeat in 1..=opts.repeats {
        let runs = (0..placed.len()).map(|k| (vec![k], "alone"));
        for (members, run) in runs.chain([((0..placed.len()).collect(), "beside")]) {
            let names: Vec<&str> = members
                .iter()
                .map(|&k| placed[k].job.model.as_str())
                .collect();
            say(&format!(
                "repeat {repeat} of {}: {} {run} for {:.0} s",
                opts.repeats,
                names.join(", "),
                opts.warmup_s + opts.measure_s
            ));
            let jobs: Vec<(DeployJob, &Grant)> = (members.iter().enumerate())
                .map(|(i, &k)| {
                    let mut job = placed[k].job.clone();
                    job.id = next_id + i as u64;
                    (job, &placed[k].grant)
                })
                .collect();
            next_id += jobs.len() as u64;
            let Some(windows) = run_together(backend, clock, &jobs, opts, cancel)? else {
                return Err(DeployError::ColocationInterrupted {
                    csv: csv.display().to_string(),
                });
            };
            for (&k, rates) in members.iter().zip(windows) {
                let p = &placed[k];
                for (start, rate) in &rates {
                    writeln!(
                        file,
                        "{repeat},{run},{},{},{},{start:.3},{rate:.6}",
                        p.job.model, p.grant.cpus, p.grant.mem_bytes
                    )
                    .map_err(DeployError::io(csv))?;
                }
                let into = if run == "alone" {
                    &mut alone[k]
                } else {
                    &mut beside[k]
                };
                into.extend(rates.iter().map(|w| w.1));
            }
            file.flush().map_err(DeployError::io(csv))?;
        }
    }
    Ok((placed.iter().zip(alone.iter().zip(&beside)))
        .filter_map(|(p, (a, b))| {
            Some(Colocated {
                model: p.job.model.clone(),
                cpus: p.grant.cpus,
                mem_bytes: p.grant.mem_bytes,
                alone: Estimate::of(a)?,
                beside: Estimate::of(b)?,
            })
        })
        .collect())
}

/// Runs `jobs` at once, each at its grant, for the warm-up and the measured seconds; returns
/// each job's windows as `(start, samples/s)`, the start on the clock, or `None` once
/// `cancel` is set. Every job is stopped before it returns.
fn run_together(
    backend: &mut dyn Backend,
    clock: &mut dyn Clock,
    jobs: &[(DeployJob, &Grant)],
    opts: &ColocationOptions,
    cancel: &AtomicBool,
) -> Result<Option<Vec<Windows>>, DeployError> {
    let mut started: Vec<&DeployJob> = Vec::new();
    let result = (|| {
        for (job, grant) in jobs {
            backend.start(job, grant, 0.0)?;
            started.push(job);
        }
        let t0 = clock.now();
        let (from, to) = (t0 + opts.warmup_s, t0 + opts.warmup_s + opts.measure_s);
        let mut reports: Vec<Vec<Reported>> = vec![Vec::new(); jobs.len()];
        let mut running = vec![true; jobs.len()];
        let mut t = t0;
        while t < to {
            t = (t + POLL_S).min(to);
            if !clock.sleep_until(t, cancel) {
                return Ok(None);
            }
            for (i, (job, _)) in jobs.iter().enumerate() {
                if !running[i] {
                    continue;
                }
                match backend.poll(job, &mut reports[i])? {
                    Exit::Running => {}
                    Exit::Exited { success: true, .. } => running[i] = false,
                    Exit::Exited { why, .. } => {
                        return Err(DeployError::Job {
                            job_id: job.id,
                            model: job.model.clone(),
                            message: format!("failed while measured for co-location: {why}"),
                        });
                    }
                }
            }
        }
        Ok(Some(
            (reports.iter())
                .map(|r| windows(r, from, to, opts.window_s))
                .collect(),
        ))
    })();
    for job in started {
        backend.stop(job);
    }
    result
}

/// The rates of `reports` (cumulative samples over time) in windows from `from` to `to`:
/// `window_s` long, or as long as the longest gap between two reports there, so each window
/// holds a report of its own. Windows the reports do not cover are left out.
pub fn windows(reports: &[Reported], from: f64, to: f64, window_s: f64) -> Windows {
    let gap = (reports.windows(2))
        .filter(|w| w[1].t > from && w[0].t < to)
        .map(|w| w[1].t - w[0].t)
        .fold(0.0, f64::max);
    let width = window_s.max(gap);
    if !(width > 0.0 && width.is_finite()) {
        return Vec::new();
    }
    let n = ((to - from) / width).floor() as usize;
    (0..n)
        .filter_map(|k| {
            let a = from + k as f64 * width;
            let b = a + width;
            let rate = (samples_at(reports, b)? - samples_at(reports, a)?) / width;
            Some((a, rate))
        })
        .collect()
}

/// Cumulative samples at `t`, read linearly between the reports around it; `None` outside
/// them.
fn samples_at(reports: &[Reported], t: f64) -> Option<f64> {
    let i = reports.partition_point(|r| r.t < t);
    let b = reports.get(i)?;
    if b.t == t {
        return Some(b.samples);
    }
    let a = reports.get(i.checked_sub(1)?)?;
    Some(a.samples + (t - a.t) / (b.t - a.t) * (b.samples - a.samples))
}

#[cfg(test)]
mod tests {
    use super::super::backend::Regranted;
    use super::super::sim::JumpClock;
    use super::*;

    fn at(pairs: &[(f64, f64)]) -> Vec<Reported> {
        (pairs.iter())
            .map(|&(t, samples)| Reported { t, samples })
            .collect()
    }

    #[test]
    fn windows_read_a_steady_job_at_its_rate() {
        // 100 samples/s, a report every second.
        let r: Vec<(f64, f64)> = (0..=30).map(|s| (s as f64, 100.0 * s as f64)).collect();
        let w = windows(&at(&r), 10.0, 30.0, 5.0);
        assert_eq!(w.len(), 4);
        assert!(
            w.iter().all(|(_, rate)| (rate - 100.0).abs() < 1e-9),
            "{w:?}"
        );
        assert_eq!(w[0].0, 10.0);
    }

    #[test]
    fn windows_are_as_long_as_the_gaps_between_reports() {
        // A report every 7 s: 5-s windows would read the same stretch twice.
        let r: Vec<(f64, f64)> = (0..=10)
            .map(|k| (7.0 * k as f64, 70.0 * k as f64))
            .collect();
        let w = windows(&at(&r), 7.0, 63.0, 5.0);
        assert_eq!(w.len(), 8, "{w:?}");
        assert!(w.iter().all(|(_, rate)| (rate - 10.0).abs() < 1e-9));
        // No report after 20 s: the windows past it are left out.
        assert_eq!(
            windows(&at(&[(0.0, 0.0), (20.0, 200.0)]), 0.0, 60.0, 20.0).len(),
            1
        );
        assert!(windows(&at(&[]), 0.0, 60.0, 5.0).is_empty());
    }

    #[test]
    fn a_ratio_holds_both_sides_errors() {
        let alone = Estimate::of(&[100.0, 102.0, 98.0, 100.0]).unwrap();
        let beside = Estimate::of(&[80.0, 84.0, 76.0, 80.0]).unwrap();
        let c = Colocated {
            model: "m".into(),
            cpus: 0.5,
            mem_bytes: 1,
            alone,
            beside,
        };
        let [r, lo, hi] = c.ratio();
        assert!((r - 0.8).abs() < 1e-12);
        assert!(lo < 0.8 && 0.8 < hi);
        // Wider than the wider side alone: the beside windows' own relative error.
        let [bl, bh] = beside.interval();
        assert!(hi / lo > bh / bl, "{lo} {hi} {bl} {bh}");
        assert!(c.describe().contains("0.80x"), "{}", c.describe());
    }

    /// Jobs that share the machine: each runs at its own rate over the number running.
    struct Crowded {
        clock: JumpClock,
        running: std::collections::BTreeMap<u64, (f64, f64, f64)>,
        stops: usize,
    }

    impl Crowded {
        fn advance(&mut self) {
            let (now, n) = (self.clock.now(), self.running.len() as f64);
            for (samples, since, rate) in self.running.values_mut() {
                *samples += *rate / n * (now - *since);
                *since = now;
            }
        }
    }

    impl Backend for Crowded {
        fn start(&mut self, job: &DeployJob, _: &Grant, _: f64) -> Result<(), DeployError> {
            self.advance();
            let rate = if job.model == "fast" { 200.0 } else { 100.0 };
            self.running.insert(job.id, (0.0, self.clock.now(), rate));
            Ok(())
        }
        fn regrant(&mut self, _: &DeployJob, _: &Grant) -> Result<Regranted, DeployError> {
            unreachable!("co-location never re-grants")
        }
        fn suspend(&mut self, _: &DeployJob) -> Result<(), DeployError> {
            unreachable!("co-location never suspends")
        }
        fn poll(&mut self, job: &DeployJob, out: &mut Vec<Reported>) -> Result<Exit, DeployError> {
            self.advance();
            let (samples, ..) = self.running[&job.id];
            out.push(Reported {
                t: self.clock.now(),
                samples,
            });
            Ok(Exit::Running)
        }
        fn stop(&mut self, job: &DeployJob) {
            self.advance();
            self.running.remove(&job.id);
            self.stops += 1;
        }
    }

    fn placed(model: &str) -> Placed {
        let text = "schema_version = 1\nname = \"sim\"\ncommand = [\"true\"]\n\
                    [throughput]\nprotocol = \"progress-file\"\n[sweep]\ncpu = [1]\n";
        let spec = crate::spec::parse_spec(text, Path::new("sim.toml")).unwrap();
        Placed {
            job: DeployJob {
                id: 0,
                model: model.into(),
                work_samples: f64::INFINITY,
                spec: std::sync::Arc::new(spec),
            },
            grant: grants_on(&[(model.into(), 1.0, 1)], &[0]).remove(0),
        }
    }

    #[test]
    fn two_kinds_that_share_the_machine_measure_half_beside() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("colocation.csv");
        let clock = JumpClock::default();
        let mut backend = Crowded {
            clock: clock.clone(),
            running: Default::default(),
            stops: 0,
        };
        let opts = ColocationOptions {
            warmup_s: 5.0,
            measure_s: 20.0,
            window_s: 5.0,
            repeats: 2,
        };
        let mut said = Vec::new();
        let kinds = [placed("fast"), placed("slow")];
        let found = measure(
            &mut backend,
            &mut clock.clone(),
            &kinds,
            &opts,
            &csv,
            &AtomicBool::new(false),
            &mut |line| said.push(line.to_string()),
        )
        .unwrap();
        // Two repeats of three runs: fast alone, slow alone, both; every job stopped.
        assert_eq!(said.len(), 6, "{said:?}");
        assert_eq!(backend.stops, 8);
        assert!(backend.running.is_empty());
        assert_eq!(found.len(), 2);
        for (c, rate) in found.iter().zip([200.0, 100.0]) {
            assert!((c.alone.mean - rate).abs() < 1e-6, "{c:?}");
            assert!((c.beside.mean - rate / 2.0).abs() < 1e-6, "{c:?}");
            assert!((c.ratio()[0] - 0.5).abs() < 1e-9);
            assert_eq!((c.alone.windows, c.beside.windows), (8, 8));
        }
        // Every window is on file: 2 repeats x (4 + 4 alone + 2 x 4 beside).
        let rows = std::fs::read_to_string(&csv).unwrap().lines().count();
        assert_eq!(rows, 1 + 2 * 16);
        // Cancelled, it stops what it started and says so.
        let cancel = AtomicBool::new(true);
        let e = measure(
            &mut backend,
            &mut clock.clone(),
            &kinds,
            &opts,
            &csv,
            &cancel,
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            matches!(e, DeployError::ColocationInterrupted { .. }),
            "{e}"
        );
        assert!(e.to_string().contains("colocation.csv"), "{e}");
        assert!(backend.running.is_empty());
    }

    #[test]
    fn grants_spread_the_kinds_over_the_cpus_as_a_deploy_does() {
        let kinds = vec![
            ("a".to_string(), 0.5, 1),
            ("b".to_string(), 0.5, 1),
            ("c".to_string(), 1.0, 1),
        ];
        let g = grants_on(&kinds, &[4, 5]);
        assert_eq!(g[0].cpu_ids, vec![4]);
        assert_eq!(g[1].cpu_ids, vec![5]);
        assert_eq!(g[2].cpu_ids, vec![4]);
    }
}
