//! Small statistics shared by the harness and the matrix data types.

/// Two-sided 95% Student-t quantile for `df` degrees of freedom.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    match df {
        0 => f64::INFINITY,
        1..=10 => TABLE[df - 1],
        11..=20 => 2.086,
        21..=30 => 2.042,
        _ => 1.96,
    }
}
