//! Model names as traces and Synergy's zoo spell them, and ours: data both the zoo converter
//! and the profile set read.

/// Names traces use for zoo models, mapped explicitly (Synergy's traces say `res18`).
pub const ALIASES: &[(&str, &str)] = &[("res18", "resnet18"), ("res50", "resnet50")];

/// Our name for a model a trace or the zoo names (`res18` -> `resnet18`; others unchanged).
pub fn canonical_name(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(a, _)| *a == name)
        .map_or(name, |(_, to)| to)
}
