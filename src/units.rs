//! Units the whole crate counts in.

/// Bytes in a GiB (memory levels, limits and sizes are GiB: 2^30 bytes).
pub const GIB_BYTES: u64 = 1 << 30;

/// [`GIB_BYTES`] as a float, for sizes computed in floating point.
pub const GIB: f64 = GIB_BYTES as f64;
