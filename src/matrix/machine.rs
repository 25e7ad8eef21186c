//! The machine a matrix was measured on, and its machine kind: the short key that says which
//! matrices may stand for which servers. Two machines share a kind when what decides a job's
//! rate is the same on both: the processor (its model, microarchitecture and the instruction-set
//! extensions training uses), its sockets, cores and threads, the memory's size and the GPUs.
//! What changes without the machine changing (hostname, kernel, cgroup version, driver, the
//! measured bandwidth, the dataset's storage) is recorded beside the key, not in it.

use serde::{Deserialize, Serialize};

/// The kind of a matrix whose header does not record one (written before kinds were).
pub const UNKNOWN_KIND: &str = "unknown";

/// The machine a matrix was measured on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineInfo {
    pub hostname: String,
    pub cpus: u32,
    pub memory_bytes: u64,
    pub kernel: String,
    /// `v1`, `v2` or `none` (caps were not applied).
    pub cgroup: String,
    /// GPU model names from NVML; empty when there are none or NVML is unavailable.
    pub gpus: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processor: Option<Processor>,
    /// Memory read bandwidth of one core, bytes/s, measured by the sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_read_bytes_per_s: Option<f64>,
    /// Where the job's dataset lives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,
    /// Each GPU's memory and driver, in NVML's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_devices: Vec<GpuDevice>,
    /// The machine-kind key ([`MachineInfo::derive_kind`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// The processor, from `/proc/cpuinfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Processor {
    /// `GenuineIntel`, `AuthenticAMD`, `ARM`.
    pub vendor: String,
    pub model_name: String,
    /// `Ice Lake-SP`, `Zen 3`, `Neoverse-V2`; `unknown` where the table has no entry.
    pub microarchitecture: String,
    /// The extensions that change what training code runs (AVX2, AVX-512 and its BF16/VNNI/FP16
    /// parts, AMX, SVE), as `/proc/cpuinfo` names them.
    pub extensions: Vec<String>,
    pub sockets: u32,
    /// Physical cores over all sockets.
    pub cores: u32,
    /// Logical CPUs.
    pub threads: u32,
}

/// A GPU as NVML describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuDevice {
    pub name: String,
    pub memory_bytes: u64,
    pub driver: String,
}

/// The storage a dataset is read from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Storage {
    /// Block device (`nvme0n1`), or the filesystem where there is none (`tmpfs`).
    pub device: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    pub filesystem: String,
}

impl MachineInfo {
    /// The machine-kind key: a readable stem (microarchitecture, threads, memory, GPUs) and 8 hex
    /// digits of a hash over every field that decides the kind, so that two processors that
    /// read alike in the stem still differ. `None` without the processor.
    pub fn derive_kind(&self) -> Option<String> {
        let p = self.processor.as_ref()?;
        let mem_gib = (self.memory_bytes as f64 / crate::units::GIB).round() as u64;
        let gpus: Vec<String> = if self.gpu_devices.is_empty() {
            self.gpus.clone()
        } else {
            (self.gpu_devices.iter())
                .map(|g| format!("{}/{}", g.name, g.memory_bytes >> 30))
                .collect()
        };
        let canonical = format!(
            "{}|{}|{}|{}|{}s{}c{}t|{mem_gib}|{}",
            p.vendor,
            p.model_name,
            p.microarchitecture,
            p.extensions.join(","),
            p.sockets,
            p.cores,
            p.threads,
            gpus.join(",")
        );
        let arch = if p.microarchitecture == "unknown" {
            &p.vendor
        } else {
            &p.microarchitecture
        };
        let gpu_stem = match gpus.len() {
            0 => String::new(),
            n => format!(
                "-{n}x{}",
                slug(short_gpu_name(&self.gpus, &self.gpu_devices))
            ),
        };
        Some(format!(
            "{}-{}t-{mem_gib}g{gpu_stem}-{:08x}",
            slug(arch),
            p.threads,
            fnv1a(canonical.as_bytes()) as u32
        ))
    }

    /// The recorded key, or [`UNKNOWN_KIND`].
    pub fn kind_key(&self) -> &str {
        self.kind.as_deref().unwrap_or(UNKNOWN_KIND)
    }

    /// One line naming the machine: its processor, CPUs, memory, GPUs and kind.
    pub fn describe(&self) -> String {
        let cpu = match &self.processor {
            Some(p) => format!(
                "{} ({}; {})",
                p.model_name,
                p.microarchitecture,
                if p.extensions.is_empty() {
                    "no AVX2".to_string()
                } else {
                    p.extensions.join(" ")
                }
            ),
            None => "processor not recorded".into(),
        };
        let gpus = if self.gpus.is_empty() {
            "no GPU".to_string()
        } else {
            format!("{} x {}", self.gpus.len(), self.gpus[0])
        };
        format!(
            "{} [{}]: {cpu}, {} CPUs, {:.0} GiB, {gpus}, kernel {}, cgroup {}",
            self.hostname,
            self.kind_key(),
            self.cpus,
            self.memory_bytes as f64 / crate::units::GIB,
            self.kernel,
            self.cgroup
        )
    }
}

/// The machine kind of a header's machine: its key, or [`UNKNOWN_KIND`] where there is no
/// machine or no key.
pub fn kind_of(machine: Option<&MachineInfo>) -> &str {
    machine.map_or(UNKNOWN_KIND, MachineInfo::kind_key)
}

fn short_gpu_name<'a>(names: &'a [String], devices: &'a [GpuDevice]) -> &'a str {
    let full = devices
        .first()
        .map(|d| d.name.as_str())
        .or(names.first().map(String::as_str))
        .unwrap_or("gpu");
    // "NVIDIA H100 80GB HBM3" -> "H100".
    full.split_whitespace()
        .find(|w| w.chars().any(|c| c.is_ascii_digit()) && w.chars().any(char::is_alphabetic))
        .unwrap_or(full)
}

/// Lower case, letters and digits kept, every other run of characters one `-`.
fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// 64-bit FNV-1a: stable across builds and platforms, unlike the standard library's hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn icelake() -> MachineInfo {
        MachineInfo {
            hostname: "vm".into(),
            cpus: 2,
            memory_bytes: 25_276_059_648,
            kernel: "6.1".into(),
            cgroup: "v1".into(),
            processor: Some(Processor {
                vendor: "GenuineIntel".into(),
                model_name: "Intel(R) Xeon(R) Processor @ 2.60GHz".into(),
                microarchitecture: "Ice Lake-SP".into(),
                extensions: vec!["avx2".into(), "avx512f".into()],
                sockets: 1,
                cores: 2,
                threads: 2,
            }),
            ..MachineInfo::default()
        }
    }

    #[test]
    fn the_key_reads_as_the_machine_and_ignores_what_changes_without_it() {
        let a = icelake();
        let key = a.derive_kind().unwrap();
        assert!(key.starts_with("ice-lake-sp-2t-24g-"), "{key}");
        assert_eq!(key.len(), "ice-lake-sp-2t-24g-".len() + 8);
        let mut b = a.clone();
        b.hostname = "other".into();
        b.kernel = "6.18".into();
        b.cgroup = "v2".into();
        b.memory_read_bytes_per_s = Some(1e10);
        assert_eq!(b.derive_kind().unwrap(), key);
    }

    #[test]
    fn another_processor_or_gpu_is_another_kind() {
        let a = icelake();
        let mut b = a.clone();
        b.processor.as_mut().unwrap().extensions = vec!["avx2".into()];
        assert_ne!(a.derive_kind(), b.derive_kind());
        let mut c = a.clone();
        c.gpus = vec!["NVIDIA H100 80GB HBM3".into()];
        let kc = c.derive_kind().unwrap();
        assert!(kc.contains("-1xh100-"), "{kc}");
        assert_ne!(a.derive_kind().unwrap(), kc);
        let mut d = a.clone();
        d.processor = None;
        assert_eq!(d.derive_kind(), None);
        assert_eq!(d.kind_key(), UNKNOWN_KIND);
    }

    #[test]
    fn older_headers_load_as_unknown() {
        let old =
            r#"{"hostname":"vm","cpus":2,"memory_bytes":1,"kernel":"k","cgroup":"v1","gpus":[]}"#;
        let m: MachineInfo = serde_json::from_str(old).unwrap();
        assert_eq!(m.kind_key(), UNKNOWN_KIND);
        assert_eq!(serde_json::to_string(&m).unwrap(), old);
    }
}
