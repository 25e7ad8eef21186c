//! The processor from `/proc/cpuinfo`: vendor, model, microarchitecture (from the CPUID family
//! and model, or an Arm core's part number), the extensions training code dispatches on, and
//! sockets, cores and threads.

use crate::matrix::Processor;

/// `/proc/cpuinfo` flags worth a kind of their own: where one is missing, PyTorch, oneDNN and
/// the image decoders run other code.
const EXTENSIONS: &[&str] = &[
    "avx2",
    "avx512f",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "sve",
    "sve2",
];

/// This machine's processor (`None` where `/proc/cpuinfo` cannot be read).
pub fn this_processor() -> Option<Processor> {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .map(|t| parse_cpuinfo(&t))
}

/// Reads a `/proc/cpuinfo` text; what it lacks is `unknown` (text) or counted from what is there.
pub fn parse_cpuinfo(text: &str) -> Processor {
    let mut threads = 0u32;
    let mut sockets = std::collections::BTreeSet::new();
    let mut cores_per_socket = std::collections::BTreeMap::new();
    let (mut vendor, mut model_name) = (None, None);
    let (mut family, mut model, mut stepping) = (None, None, None);
    let (mut implementer, mut part) = (None, None);
    let mut flags: Vec<String> = Vec::new();
    let mut socket = "0".to_string();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let number = || {
            value
                .strip_prefix("0x")
                .map_or_else(|| value.parse().ok(), |h| u32::from_str_radix(h, 16).ok())
        };
        match key {
            "processor" => threads += 1,
            "vendor_id" => vendor = vendor.or(Some(value.to_string())),
            "model name" => model_name = model_name.or(Some(value.to_string())),
            "cpu family" => family = family.or(number()),
            "model" => model = model.or(number()),
            "stepping" => stepping = stepping.or(number()),
            "CPU implementer" => implementer = implementer.or(number()),
            "CPU part" => part = part.or(number()),
            "physical id" => {
                socket = value.to_string();
                sockets.insert(socket.clone());
            }
            "cpu cores" => {
                cores_per_socket.insert(socket.clone(), number().unwrap_or(0));
            }
            "flags" | "Features" if flags.is_empty() => {
                let have: Vec<&str> = value.split_whitespace().collect();
                flags = (EXTENSIONS.iter())
                    .filter(|e| have.contains(e))
                    .map(|e| e.to_string())
                    .collect();
            }
            _ => {}
        }
    }
    let arm = implementer.is_some() && vendor.is_none();
    let vendor = if arm {
        "ARM".to_string()
    } else {
        vendor.unwrap_or_else(|| "unknown".into())
    };
    let microarchitecture = match (arm, implementer, part) {
        (true, Some(imp), Some(part)) => arm_core(imp, part),
        _ => x86_core(&vendor, family, model, stepping),
    }
    .unwrap_or("unknown")
    .to_string();
    let cores: u32 = cores_per_socket.values().sum();
    Processor {
        model_name: model_name.unwrap_or_else(|| match arm {
            true => microarchitecture.clone(),
            false => "unknown".into(),
        }),
        vendor,
        microarchitecture,
        extensions: flags,
        sockets: (sockets.len() as u32).max(1),
        cores: if cores == 0 { threads } else { cores },
        threads,
    }
}

/// Server and desktop cores of the x86 generations GPU servers ship with (Intel's and AMD's
/// CPUID family/model tables).
fn x86_core(
    vendor: &str,
    family: Option<u32>,
    model: Option<u32>,
    stepping: Option<u32>,
) -> Option<&'static str> {
    let (family, model) = (family?, model?);
    match (vendor, family) {
        ("GenuineIntel", 6) => Some(match model {
            0x3F => "Haswell",
            0x4F | 0x56 => "Broadwell",
            0x55 => match stepping.unwrap_or(0) {
                0..=4 => "Skylake-SP",
                5..=7 => "Cascade Lake",
                _ => "Cooper Lake",
            },
            0x5E | 0x4E => "Skylake",
            0x8E | 0x9E => "Coffee Lake",
            0x6A | 0x6C => "Ice Lake-SP",
            0x7E | 0x7D => "Ice Lake",
            0x8F => "Sapphire Rapids",
            0xCF => "Emerald Rapids",
            0xAD | 0xAE => "Granite Rapids",
            0xAF => "Sierra Forest",
            0x97 | 0x9A => "Alder Lake",
            0xB7 | 0xBA | 0xBF => "Raptor Lake",
            _ => return None,
        }),
        ("AuthenticAMD", 0x17) => Some(match model {
            0x00..=0x2F => "Zen",
            _ => "Zen 2",
        }),
        ("AuthenticAMD", 0x19) => Some(match model {
            0x00..=0x0F | 0x20..=0x5F => "Zen 3",
            0xA0..=0xAF => "Zen 4c",
            _ => "Zen 4",
        }),
        ("AuthenticAMD", 0x1A) => Some("Zen 5"),
        _ => None,
    }
}

/// Arm's Neoverse server cores and NVIDIA's Grace (a Neoverse-V2), by implementer and part.
fn arm_core(implementer: u32, part: u32) -> Option<&'static str> {
    match (implementer, part) {
        (0x41, 0xD0C) => Some("Neoverse-N1"),
        (0x41, 0xD40) => Some("Neoverse-V1"),
        (0x41, 0xD49) => Some("Neoverse-N2"),
        (0x41, 0xD4F) => Some("Neoverse-V2"),
        (0x41, 0xD8E) => Some("Neoverse-N3"),
        (0x41, 0xD84) => Some("Neoverse-V3"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x86(vendor: &str, family: u32, model: u32, cpus: u32, flags: &str) -> String {
        (0..cpus)
            .map(|i| {
                format!(
                    "processor\t: {i}\nvendor_id\t: {vendor}\ncpu family\t: {family}\n\
                     model\t\t: {model}\nmodel name\t: Some CPU\nstepping\t: 6\n\
                     physical id\t: {}\ncpu cores\t: {}\nflags\t\t: fpu sse2 {flags}\n\n",
                    i % 2,
                    cpus / 4
                )
            })
            .collect()
    }

    #[test]
    fn an_intel_server_with_amx() {
        let p = parse_cpuinfo(&x86(
            "GenuineIntel",
            6,
            143,
            8,
            "avx2 avx512f avx512_bf16 amx_tile amx_bf16 avx512_vnni",
        ));
        assert_eq!(p.microarchitecture, "Sapphire Rapids");
        assert_eq!(
            p.extensions,
            [
                "avx2",
                "avx512f",
                "avx512_vnni",
                "avx512_bf16",
                "amx_tile",
                "amx_bf16"
            ]
        );
        assert_eq!((p.sockets, p.cores, p.threads), (2, 4, 8));
    }

    #[test]
    fn an_amd_server_without_avx512() {
        let p = parse_cpuinfo(&x86("AuthenticAMD", 25, 1, 4, "avx2 fma"));
        assert_eq!(p.microarchitecture, "Zen 3");
        assert_eq!(p.extensions, ["avx2"]);
        assert_eq!(p.vendor, "AuthenticAMD");
    }

    #[test]
    fn grace_from_its_part_number() {
        let text = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve sve2 bf16\n\
                    CPU implementer\t: 0x41\nCPU part\t: 0xd4f\n\nprocessor\t: 1\n";
        let p = parse_cpuinfo(text);
        assert_eq!(p.vendor, "ARM");
        assert_eq!(p.microarchitecture, "Neoverse-V2");
        assert_eq!(p.extensions, ["asimd", "sve", "sve2"]);
        assert_eq!((p.sockets, p.cores, p.threads), (1, 2, 2));
    }

    #[test]
    fn this_machine_reads() {
        let p = this_processor().expect("/proc/cpuinfo");
        assert!(p.threads >= 1 && p.cores >= 1 && p.sockets >= 1);
        assert!(!p.vendor.is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_text_reads_without_panicking(text in ".{0,400}") {
            let p = parse_cpuinfo(&text);
            proptest::prop_assert!(p.sockets >= 1);
        }
    }
}
