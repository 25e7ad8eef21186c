//! Throughput profiles for the replay, built from sensitivity matrices (`*.matrix.jsonl`).
//!
//! A matrix gives samples/s of a job that used `header.job.gpus` GPUs at a grid of CPU x memory
//! allocations. The replay works per GPU: a job with `g` GPUs given `c` cores and `m` GB runs at
//! `g * T(c/g, m/g)` where `T` is the matrix's per-GPU throughput ([`Surface`]: linear scaling
//! in GPUs, as Synergy's simulator assumes; a CPU-only matrix counts as one GPU).
//!
//! Between grid points:
//! * [`Semantics::Exact`] (default): bilinear interpolation in (cores per GPU, GB per GPU) over
//!   the grid cell that contains the point; above the largest level of an axis the value is
//!   clamped; below the smallest level it falls linearly to 0 at 0.
//! * [`Semantics::Synergy`]: the value of the largest grid point at or below the allocation on
//!   both axes (a step function), which reproduces Synergy's simulator: it only ever asks for
//!   grid points (best case or proportional) and gets their table value.
//!
//! Before either, the grid is made monotone (a cell is at least as fast as any cell with less of
//! both resources: a job can leave extra resources idle); failed and infeasible cells count 0 and
//! missing cells are filled from the dominated cells.

use super::error::ReplayError;
use crate::matrix::demand::{self, CostWeights};
use crate::matrix::{Interp, Matrix, ServerShape, Surface};
use std::collections::BTreeMap;
use std::path::Path;

/// How throughput between grid points and progress within a round are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Semantics {
    /// Bilinear interpolation, exact finish times within a round.
    #[default]
    Exact,
    /// Synergy's simulator: grid step lookup, progress per whole round, JCT on round boundaries.
    Synergy,
}

/// Job class for the synthetic class split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JobClass {
    Image,
    Language,
    Speech,
}

impl JobClass {
    pub const ALL: [JobClass; 3] = [JobClass::Image, JobClass::Language, JobClass::Speech];

    pub fn as_str(self) -> &'static str {
        match self {
            JobClass::Image => "image",
            JobClass::Language => "language",
            JobClass::Speech => "speech",
        }
    }
}

/// Classes of the ten models Synergy's evaluation uses (slides: "Image: AlexNet, ResNet18,
/// ShuffleNet, MobileNet, ResNet50; Language: GNMT, LSTM, Transformer-XL; Audio: DeepSpeech, M5").
/// Other models (the zoo's `bert`, `vae`, or any matrix of ours) have no class and are never
/// drawn by the synthetic generator, but traces may name them.
pub fn builtin_class(model: &str) -> Option<JobClass> {
    match model {
        "alexnet" | "resnet18" | "shufflenet" | "mobilenet" | "resnet50" => Some(JobClass::Image),
        "gnmt" | "lstm" | "transformer" => Some(JobClass::Language),
        "deepspeech" | "m5" => Some(JobClass::Speech),
        _ => None,
    }
}

pub use super::model_names::ALIASES;

/// One model's per-GPU throughput surface, with what the replay derives from it once.
#[derive(Debug, Clone)]
pub struct Profile {
    pub model: String,
    pub class: Option<JobClass>,
    pub batch_size_per_gpu: Option<u64>,
    pub provenance: Option<String>,
    /// Levels in cores and GB per GPU, per-GPU samples/s, monotone.
    pub surface: Surface,
    /// Best case: the least (CPU + memory, each relative to its largest level) grid point that
    /// reaches the maximum throughput; cores per GPU, GB per GPU, samples/s per GPU.
    pub best_cpu: f64,
    pub best_mem: f64,
    pub best_tput: f64,
    /// Throughput multiplier of a job spread over more than one server (Synergy's
    /// `placement_penalty`; 1, free spreading, for every model of its zoo). Set for every
    /// profile by `--spread-penalty`.
    pub placement_penalty: f64,
    /// The best case per GPU (cores, GB) the profile's source declares, when it declares one:
    /// Synergy's zoo lists its ideal demands (20 GB for language models, below its grid's
    /// smallest level, 20.83). `--semantics synergy` uses it.
    pub declared_best: Option<(f64, f64)>,
    /// What starting the job costs it (nothing, unless a deploy's job specs say).
    pub start: StartCost,
    /// The machine the matrix was measured on, as its header records it.
    pub machine: Option<crate::matrix::MachineInfo>,
    /// The file (or built-in name) it was read from.
    pub source: String,
}

/// Seconds a job spends starting before it progresses at its rate, charged under exact
/// semantics each time it starts: at its first start, and where it is started again to be
/// resized (a job that sizes itself to its CPUs at start, as a deploy restarts it) each time
/// its whole-CPU count changes. Matrices measure steady rates, without it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StartCost {
    pub startup_s: f64,
    pub restarts_to_resize: bool,
}

impl Profile {
    pub fn from_matrix(m: &Matrix, origin: &str) -> Result<Profile, ReplayError> {
        let surface =
            Surface::from_matrix(m).map_err(|e| ReplayError::Profile(format!("{origin}: {e}")))?;
        // Cost relative to the largest level of each axis: the replay's best case does not
        // depend on a server shape (the cluster may mix shapes).
        let largest = ServerShape {
            cpus: surface.cpu[surface.cpu.len() - 1],
            gpus: 1,
            mem_gb: surface.mem[surface.mem.len() - 1],
        };
        let best = match reachable_top(m) {
            // A predicted matrix: its best case from the cells that may reach its top rate,
            // at the rate each runs at.
            Some(lifted) => {
                let reach = Surface::from_matrix(&lifted)
                    .map_err(|e| ReplayError::Profile(format!("{origin}: {e}")))?;
                let mut b = demand::best_case(&reach, &largest, 0.0, CostWeights::default());
                b.samples_per_s_per_gpu =
                    surface.at(b.cpus_per_gpu, b.mem_gb_per_gpu, Interp::Step);
                b
            }
            None => demand::best_case(&surface, &largest, 0.0, CostWeights::default()),
        };
        let h = &m.header;
        let model = h.job.model.clone();
        Ok(Profile {
            class: builtin_class(&model),
            model,
            batch_size_per_gpu: h.job.batch_size_per_gpu,
            provenance: h.provenance.clone(),
            best_cpu: best.cpus_per_gpu,
            best_mem: best.mem_gb_per_gpu,
            best_tput: best.samples_per_s_per_gpu,
            placement_penalty: 1.0,
            declared_best: None,
            start: StartCost::default(),
            machine: h.machine.clone(),
            source: origin.to_string(),
            surface,
        })
    }

    /// The machine-kind key of its matrix (`unknown` where the header records none).
    pub fn machine_kind(&self) -> &str {
        crate::matrix::machine::kind_of(self.machine.as_ref())
    }

    /// Per-GPU samples/s at `c` cores and `m` GB per GPU.
    pub fn per_gpu(&self, c: f64, m: f64, sem: Semantics) -> f64 {
        let interp = match sem {
            Semantics::Synergy => Interp::Step,
            Semantics::Exact => Interp::Bilinear,
        };
        self.surface.at(c, m, interp)
    }

    /// Samples/s of a job with `gpus` GPUs given `cpus` cores and `mem_gb` GB in all.
    pub fn rate(&self, gpus: u32, cpus: f64, mem_gb: f64, sem: Semantics) -> f64 {
        let g = gpus.max(1) as f64;
        g * self.per_gpu(cpus / g, mem_gb / g, sem)
    }
}

/// `m` with each predicted cell lifted to the matrix's top rate where its rate and its
/// interval's half-width reach it, for the best case: the fewest resources whose prediction
/// cannot be told from the top. `None` where no predicted cell is lifted (a measured matrix's
/// best case is its own). From a few cells a predicted curve nears its plateau slowly, so its
/// point estimates alone put the best case too high; its interval's upper end alone, where the
/// interval is lopsided towards a knee, too low (docs/findings/predict.md).
fn reachable_top(m: &Matrix) -> Option<Matrix> {
    let top = (m.cells.iter())
        .filter_map(crate::matrix::Cell::samples_per_s)
        .fold(0.0, f64::max);
    let top_relative = (m.cells.iter())
        .filter_map(|c| c.relative.as_ref().map(|r| r.rate))
        .fold(0.0, f64::max);
    let mut lifted = m.clone();
    let mut any = false;
    for c in (lifted.cells.iter_mut()).filter(|c| c.source == crate::matrix::CellSource::Predicted)
    {
        let Some(t) = c.throughput.as_mut() else {
            continue;
        };
        let reach = t.samples_per_s + (t.ci95_high - t.ci95_low) / 2.0;
        if t.samples_per_s < top && reach >= top * (1.0 - 1e-9) {
            t.samples_per_s = top;
            if let Some(r) = c.relative.as_mut() {
                r.rate = top_relative;
            }
            any = true;
        }
    }
    any.then_some(lifted)
}

/// The profiles a replay can use, by model name.
#[derive(Debug, Clone, Default)]
pub struct ProfileSet {
    pub profiles: Vec<Profile>,
    by_name: BTreeMap<String, usize>,
    /// Each (model, machine kind) profile.
    by_kind: BTreeMap<(String, String), usize>,
    /// Where the profiles came from (directory or "built-in zoo").
    pub origin: String,
}

/// Synergy's per-model scalars (ideal demands, speed-up, placement penalty), for the demands
/// its zoo declares.
const ZOO_SCALARS: &str = include_str!("../../matrices/zoo-source/model_zoo_scalars.csv");

/// Ideal (cores, GB) per GPU of each zoo model for the default server shape (3 CPUs per GPU).
fn zoo_declared_best() -> BTreeMap<String, (f64, f64)> {
    ZOO_SCALARS
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() >= 4 && f[0] == "3").then(|| {
                let name = super::model_names::canonical_name(f[1]).to_owned();
                let num = |s: &str| s.parse::<f64>().expect("shipped zoo scalars are numbers");
                (name, (num(f[2]), num(f[3])))
            })
        })
        .collect()
}

impl ProfileSet {
    /// The built-in Synergy model zoo.
    pub fn builtin_zoo() -> ProfileSet {
        let mut set = ProfileSet {
            origin: "built-in Synergy model zoo (matrices/zoo)".into(),
            ..Default::default()
        };
        let declared = zoo_declared_best();
        for (name, path, m) in crate::matrix::shipped_zoo() {
            let mut p = Profile::from_matrix(&m, &path.display().to_string())
                .expect("shipped zoo matrix is valid");
            p.declared_best = declared.get(name).copied();
            set.insert(p).expect("zoo names are unique");
        }
        set
    }

    /// Every `*.matrix.jsonl` in `dir` (sorted by file name), or one matrix file.
    pub fn load(path: &Path) -> Result<ProfileSet, ReplayError> {
        let mut files = Vec::new();
        if path.is_dir() {
            for e in std::fs::read_dir(path).map_err(ReplayError::io(path))? {
                let p = e.map_err(ReplayError::io(path))?.path();
                if p.to_string_lossy().ends_with(".matrix.jsonl") {
                    files.push(p);
                }
            }
            files.sort();
        } else {
            files.push(path.to_owned());
        }
        if files.is_empty() {
            return Err(ReplayError::Profile(format!(
                "{}: no *.matrix.jsonl files",
                path.display()
            )));
        }
        let mut set = ProfileSet {
            origin: path.display().to_string(),
            ..Default::default()
        };
        for f in files {
            let m =
                crate::matrix::load_matrix(&f).map_err(|e| ReplayError::Profile(e.to_string()))?;
            set.insert(Profile::from_matrix(&m, &f.display().to_string())?)?;
        }
        Ok(set)
    }

    /// Adds a profile. A model may have one matrix per machine kind; the first one read is the
    /// model's profile where the cluster names no kinds.
    pub fn insert(&mut self, p: Profile) -> Result<(), ReplayError> {
        let key = (p.model.clone(), p.machine_kind().to_string());
        if let Some(&other) = self.by_kind.get(&key) {
            return Err(ReplayError::Profile(format!(
                "two matrices for model {:?} of machine kind {}: {} and {}",
                p.model, key.1, self.profiles[other].source, p.source
            )));
        }
        self.by_kind.insert(key, self.profiles.len());
        self.by_name
            .entry(p.model.clone())
            .or_insert(self.profiles.len());
        self.profiles.push(p);
        Ok(())
    }

    /// The machine kinds `model` has matrices of (following the aliases).
    pub fn kinds_of(&self, model: &str) -> Vec<&str> {
        let Some(i) = self.lookup(model) else {
            return Vec::new();
        };
        let model = &self.profiles[i].model;
        (self.by_kind.keys())
            .filter(|(m, _)| m == model)
            .map(|(_, k)| k.as_str())
            .collect()
    }

    /// Index of `model`'s profile of machine kind `kind`, following the aliases.
    pub fn lookup_kind(&self, model: &str, kind: &str) -> Option<usize> {
        let i = self.lookup(model)?;
        let key = (self.profiles[i].model.clone(), kind.to_string());
        self.by_kind.get(&key).copied()
    }

    /// Index of a model's profile, following the explicit aliases.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied().or_else(|| {
            ALIASES
                .iter()
                .find(|(a, _)| *a == name)
                .and_then(|(_, to)| self.by_name.get(*to).copied())
        })
    }

    /// Known model names, for error messages.
    pub fn known(&self) -> String {
        let mut names: Vec<String> = self.by_name.keys().cloned().collect();
        for (a, to) in ALIASES {
            if self.by_name.contains_key(*to) {
                names.push(format!("{a} (= {to})"));
            }
        }
        names.join(", ")
    }

    /// Sets every profile's placement penalty (throughput multiplier when spread over servers).
    pub fn set_placement_penalty(&mut self, penalty: f64) {
        for p in &mut self.profiles {
            p.placement_penalty = penalty;
        }
    }

    pub fn get(&self, i: usize) -> &Profile {
        &self.profiles[i]
    }

    /// Sets what starting a job of `model` costs, on every kind (a profile it has none of is
    /// left alone).
    pub fn set_start_cost(&mut self, model: &str, cost: StartCost) {
        for p in self.profiles.iter_mut().filter(|p| p.model == model) {
            p.start = cost;
        }
    }

    /// Whether starting any job costs something.
    pub fn any_start_cost(&self) -> bool {
        self.profiles.iter().any(|p| p.start.startup_s > 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::CellSource;
    use crate::predict::{Library, SETTINGS, predict_matrix};

    /// Each zoo model predicted from its cells at 3 and 24 CPUs, the other models its library:
    /// its best case counts the predicted cells whose rate and half-width reach the top rate,
    /// so it is at most the point estimates' own, and a measured matrix's is unchanged.
    #[test]
    fn a_predicted_matrix_s_best_case_counts_cells_that_may_reach_the_top() {
        let mut lower = 0;
        for (name, _, truth) in crate::matrix::shipped_zoo() {
            assert!(
                reachable_top(&truth).is_none(),
                "{name}: measured, unchanged"
            );
            let mut partial = truth.clone();
            partial.cells.retain(|c| c.cpu == 3.0 || c.cpu == 24.0);
            for c in &mut partial.cells {
                c.source = CellSource::Measured;
            }
            let library = Library::zoo().without(name);
            let predicted = predict_matrix(&partial, &[], &library, &SETTINGS)
                .unwrap()
                .matrix;
            let profile = Profile::from_matrix(&predicted, name).unwrap();
            let surface = Surface::from_matrix(&predicted).unwrap();
            let largest = ServerShape {
                cpus: surface.cpu[surface.cpu.len() - 1],
                gpus: 1,
                mem_gb: surface.mem[surface.mem.len() - 1],
            };
            let point = demand::best_case(&surface, &largest, 0.0, CostWeights::default());
            assert!(profile.best_cpu <= point.cpus_per_gpu, "{name}");
            assert!(profile.best_tput <= point.best_samples_per_s_per_gpu * (1.0 + 1e-9));
            if profile.best_cpu < point.cpus_per_gpu {
                lower += 1;
            }
        }
        assert!(lower > 0, "no predicted zoo model's best case moved");
    }
}
