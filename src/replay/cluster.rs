//! Cluster spec: groups of identical servers, from TOML or the built-in `synergy-default`.
//!
//! ```toml
//! name = "two-kinds"
//! [[group]]
//! count = 16          # servers in the group
//! gpus = 8            # per server
//! cpus = 24           # cores per server
//! memory_gb = 500     # per server
//! storage_mb_per_s = 1000   # optional; recorded, not used by the replay yet
//! machine_kind = "sapphire-rapids-224t-2015g-8xh100-1a2b3c4d"   # optional, see below
//! ```
//!
//! A heterogeneous cluster names each group's machine kind (the key `profiler doctor` prints
//! and every matrix records): a job then runs at the rate of its model's matrix of the kind of
//! server it is placed on. Either every group names one or none does. Top-level keys:
//! `kind_placement` (`by-kind`, the default: each job goes first to the kind of server it
//! gains most on against the other models; `any`: kinds are ignored when placing) and
//! `kind_fallback` (a kind whose matrix stands in for a model that has none of a group's kind;
//! without it that is an error naming both).

use super::bounds;
use super::error::ReplayError;
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerGroup {
    #[serde(default)]
    pub name: Option<String>,
    pub count: u32,
    pub gpus: u32,
    pub cpus: f64,
    pub memory_gb: f64,
    #[serde(default)]
    pub storage_mb_per_s: Option<f64>,
    /// The machine kind of the group's servers: the key a matrix's header records.
    #[serde(default)]
    pub machine_kind: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(rename = "group")]
    pub groups: Vec<ServerGroup>,
    #[serde(default)]
    pub kind_placement: KindPlacement,
    /// The kind whose matrix stands in for a model with none of a server's kind.
    #[serde(default)]
    pub kind_fallback: Option<String>,
}

/// How placement treats the servers' machine kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum KindPlacement {
    /// Each job tries the kinds in the order of its comparative advantage: its rate on a kind
    /// against its rate on the first group's, over the same ratio averaged over every model
    /// (Gavel's view of heterogeneity): a job that gains little on the fast kind leaves it to
    /// those that gain more.
    #[default]
    ByKind,
    /// Kinds play no part in where a job goes (its rate still follows the kind it lands on).
    Any,
}

/// Most machine kinds one cluster may mix.
pub const MAX_KINDS: usize = 32;

/// Slack for floating-point sums of CPUs and GB.
pub const EPS: f64 = 1e-9;

/// A resource vector: GPUs, cores, GB (a server's capacity or what is left of it, a demand).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Resources {
    pub gpus: u32,
    pub cpus: f64,
    pub mem_gb: f64,
}

impl Resources {
    pub fn new(gpus: u32, cpus: f64, mem_gb: f64) -> Resources {
        Resources { gpus, cpus, mem_gb }
    }

    /// Whether `demand` fits in `self` in every dimension (CPUs and GB within [`EPS`]).
    pub fn fits(&self, demand: &Resources) -> bool {
        self.gpus >= demand.gpus
            && self.cpus + EPS >= demand.cpus
            && self.mem_gb + EPS >= demand.mem_gb
    }
}

/// One server; capacities are whole-server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Server {
    pub gpus: u32,
    pub cpus: f64,
    pub mem_gb: f64,
    pub group: usize,
    /// Index into [`Cluster::kinds`] (0 where the cluster names no kinds).
    pub kind: u16,
}

impl Server {
    pub fn capacity(&self) -> Resources {
        Resources::new(self.gpus, self.cpus, self.mem_gb)
    }

    /// Proportional share per GPU: (cores, GB).
    pub fn share_per_gpu(&self) -> (f64, f64) {
        let g = self.gpus.max(1) as f64;
        (self.cpus / g, self.mem_gb / g)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    pub name: String,
    pub spec: ClusterSpec,
    pub servers: Vec<Server>,
    pub total_gpus: u32,
    pub total_cpus: f64,
    pub total_mem_gb: f64,
    pub max_server_gpus: u32,
    /// The machine kinds its groups name, in order of first appearance; empty where none does
    /// (every model then has one matrix, whatever machine it came from).
    pub kinds: Vec<String>,
}

impl ClusterSpec {
    /// `count` x (8 GPUs, 24 CPUs, 500 GB): Synergy's server (16 of them by default).
    pub fn synergy(count: u32) -> ClusterSpec {
        ClusterSpec {
            name: Some(if count == 16 {
                "synergy-default".into()
            } else {
                format!("synergy-{count}x8")
            }),
            groups: vec![ServerGroup {
                name: Some("synergy".into()),
                count,
                gpus: 8,
                cpus: 24.0,
                memory_gb: 500.0,
                storage_mb_per_s: None,
                machine_kind: None,
            }],
            kind_placement: KindPlacement::default(),
            kind_fallback: None,
        }
    }

    /// 16 identical servers of 4 GPUs: the elastic scenarios' 64-GPU clusters.
    fn sixteen_by_four(name: &str, cpus: f64, memory_gb: f64) -> ClusterSpec {
        ClusterSpec {
            name: Some(name.into()),
            groups: vec![ServerGroup {
                name: Some(name.into()),
                count: 16,
                gpus: 4,
                cpus,
                memory_gb,
                storage_mb_per_s: None,
                machine_kind: None,
            }],
            kind_placement: KindPlacement::default(),
            kind_fallback: None,
        }
    }

    /// Built-in names: `synergy-default` (16 servers), `synergy-deploy` (4 servers, the
    /// 32-GPU deployment), `synergy-N` (N servers of Synergy's shape); for elastic jobs
    /// `ones-64` (ONES's evaluation: 16 TACC Frontera RTX nodes, each 4 Quadro RTX 5000 GPUs,
    /// 16 cores (2 x Xeon E5-2620 v4), 128 GB; ONES's artifact and Frontera's user guide) and
    /// `pollux-64` (Pollux's testbed: 16 AWS g4dn.12xlarge, each 4 T4 GPUs, 48 vCPUs, 192 GB;
    /// Pollux, OSDI'21, section 5.1, and AWS's instance table).
    /// `synergy-N` with N above [`bounds::MAX_SERVERS`] is no built-in (see [`Self::resolve`]).
    pub fn builtin(name: &str) -> Option<ClusterSpec> {
        match name {
            "synergy-default" => Some(Self::synergy(16)),
            "synergy-deploy" => Some(Self::synergy(4)),
            "ones-64" => Some(Self::sixteen_by_four("ones-64", 16.0, 128.0)),
            "pollux-64" => Some(Self::sixteen_by_four("pollux-64", 48.0, 192.0)),
            _ => name
                .strip_prefix("synergy-")
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|&n| n > 0 && u64::from(n) <= bounds::MAX_SERVERS)
                .map(Self::synergy),
        }
    }

    /// Parses and validates a TOML spec; errors name the line (of the `[[group]]` header for
    /// a group's values).
    pub fn from_toml(text: &str, path: &Path) -> Result<ClusterSpec, ReplayError> {
        let line_of = |byte: usize| bounds::line_at(text, byte);
        let spec: ClusterSpec = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(s.start));
            ReplayError::parse(path, line, e.message().trim_end().to_owned())
        })?;
        spec.validate().map_err(|(group, message)| {
            // The group's `[[group]]` header, if it is written that way (else line 1).
            let line = group
                .and_then(|g| {
                    text.lines()
                        .enumerate()
                        .filter(|(_, l)| l.trim_start().starts_with("[[group]]"))
                        .nth(g)
                        .map(|(i, _)| i + 1)
                })
                .unwrap_or(1);
            ReplayError::parse(path, line, message)
        })?;
        Ok(spec)
    }

    /// Checks every group against [`bounds`]: `Err((group index, message))`.
    pub fn validate(&self) -> Result<(), (Option<usize>, String)> {
        if self.groups.is_empty() {
            return Err((None, "no [[group]] of servers".into()));
        }
        let mut servers = 0u64;
        for (i, g) in self.groups.iter().enumerate() {
            let label = g.name.clone().unwrap_or_else(|| format!("group {}", i + 1));
            let err = |m: String| Err((Some(i), format!("{label}: {m}")));
            if g.count == 0 || g.gpus == 0 {
                return err("count and gpus must be at least 1".into());
            }
            if g.gpus > bounds::MAX_GPUS_PER_SERVER {
                return err(format!(
                    "{} GPUs per server is more than the {} supported",
                    g.gpus,
                    bounds::MAX_GPUS_PER_SERVER
                ));
            }
            if let Err(m) = bounds::positive("cpus", g.cpus, bounds::MAX_CPUS_PER_SERVER).and(
                bounds::positive("memory_gb", g.memory_gb, bounds::MAX_MEM_GB_PER_SERVER),
            ) {
                return err(m);
            }
            if let Some(Err(m)) = g
                .storage_mb_per_s
                .map(|x| bounds::in_range("storage_mb_per_s", x, 0.0, 1e12))
            {
                return err(m);
            }
            if let Some(kind) = &g.machine_kind
                && (kind.is_empty()
                    || !kind
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            {
                return err(format!(
                    "machine_kind {kind:?}: expected a machine-kind key such as `profiler \
                     doctor` prints (letters, digits, '-', '_', '.')"
                ));
            }
            if g.machine_kind.is_some() != self.groups[0].machine_kind.is_some() {
                return err(
                    "either every group names its machine_kind or none does (a job's rate \
                     comes from the matrix of its server's kind)"
                        .into(),
                );
            }
            servers += u64::from(g.count);
            if servers > bounds::MAX_SERVERS {
                return err(format!(
                    "the cluster would have {servers} servers or more; at most {} are supported",
                    bounds::MAX_SERVERS
                ));
            }
        }
        let mut kinds: Vec<&str> = (self.groups.iter())
            .filter_map(|g| g.machine_kind.as_deref())
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        if kinds.len() > MAX_KINDS {
            return Err((
                None,
                format!("{} machine kinds: at most {MAX_KINDS}", kinds.len()),
            ));
        }
        if self.kind_fallback.is_some() && kinds.is_empty() {
            return Err((
                None,
                "kind_fallback names a kind, but no group names its machine_kind".into(),
            ));
        }
        Ok(())
    }

    /// A built-in name, or a TOML file.
    pub fn resolve(name_or_path: &str) -> Result<ClusterSpec, ReplayError> {
        if let Some(spec) = Self::builtin(name_or_path) {
            return Ok(spec);
        }
        if let Some(n) = name_or_path.strip_prefix("synergy-")
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && !Path::new(name_or_path).exists()
        {
            return Err(ReplayError::Cluster(format!(
                "{name_or_path:?}: synergy-N needs 1 <= N <= {} servers",
                bounds::MAX_SERVERS
            )));
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(ReplayError::Cluster(format!(
                "{name_or_path:?} is neither a built-in cluster (synergy-default, \
                 synergy-deploy, synergy-N, ones-64, pollux-64) nor a TOML file"
            )));
        }
        // Bounded read: a cluster spec is a few lines, and the path may be a device or pipe.
        let mut text = String::new();
        let file = std::fs::File::open(path).map_err(ReplayError::io(path))?;
        std::io::Read::read_to_string(
            &mut std::io::Read::take(file, bounds::MAX_LINE_BYTES as u64 + 1),
            &mut text,
        )
        .map_err(ReplayError::io(path))?;
        if text.len() > bounds::MAX_LINE_BYTES {
            return Err(ReplayError::parse(
                path,
                1,
                format!(
                    "larger than {} bytes: not a cluster spec",
                    bounds::MAX_LINE_BYTES
                ),
            ));
        }
        Self::from_toml(&text, path)
    }

    pub fn build(&self) -> Result<Cluster, ReplayError> {
        self.validate().map_err(|(_, m)| ReplayError::Cluster(m))?;
        let mut servers = Vec::new();
        let mut kinds: Vec<String> = Vec::new();
        for (i, g) in self.groups.iter().enumerate() {
            let kind = match &g.machine_kind {
                None => 0,
                Some(k) => match kinds.iter().position(|known| known == k) {
                    Some(at) => at,
                    None => {
                        kinds.push(k.clone());
                        kinds.len() - 1
                    }
                },
            } as u16;
            for _ in 0..g.count {
                servers.push(Server {
                    gpus: g.gpus,
                    cpus: g.cpus,
                    mem_gb: g.memory_gb,
                    group: i,
                    kind,
                });
            }
        }
        Ok(Cluster {
            name: self.name.clone().unwrap_or_else(|| "custom".into()),
            total_gpus: servers.iter().map(|s| s.gpus).sum(),
            total_cpus: servers.iter().map(|s| s.cpus).sum(),
            total_mem_gb: servers.iter().map(|s| s.mem_gb).sum(),
            max_server_gpus: servers.iter().map(|s| s.gpus).max().unwrap_or(0),
            kinds,
            spec: self.clone(),
            servers,
        })
    }
}

impl Cluster {
    /// The cluster in words: name, servers, GPUs, cores, GB (and kinds, where it mixes them).
    pub fn describe(&self) -> String {
        let kinds = if self.kinds.len() > 1 {
            format!(", {} machine kinds", self.kinds.len())
        } else {
            String::new()
        };
        format!(
            "{} ({} servers, {} GPUs, {} cores, {} GB{kinds})",
            self.name,
            self.servers.len(),
            self.total_gpus,
            self.total_cpus,
            self.total_mem_gb
        )
    }

    /// Whether placement should follow the servers' kinds: there are several, and the cluster
    /// asks for it.
    pub fn places_by_kind(&self) -> bool {
        self.kinds.len() > 1 && self.spec.kind_placement == KindPlacement::ByKind
    }

    /// Every server's capacity: (GPUs, cores, GB).
    pub fn capacities(&self) -> Vec<(u32, f64, f64)> {
        self.servers
            .iter()
            .map(|s| (s.gpus, s.cpus, s.mem_gb))
            .collect()
    }

    /// Proportional share per GPU of the first group, the reference shape used to turn
    /// durations into work and to estimate remaining times.
    pub fn reference_share(&self) -> (f64, f64) {
        self.servers[0].share_per_gpu()
    }
}
