//! The few distributions the evolutionary search draws from, on the policy's own ChaCha stream
//! (so a seed gives the same decisions on every platform).

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

/// Uniform in (0, 1): never exactly 0, so logarithms stay finite.
pub fn unit(rng: &mut ChaCha8Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// Uniform integer in [0, n), n > 0.
pub fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    ((unit(rng) * n as f64) as usize).min(n.saturating_sub(1))
}

/// Standard normal (Box-Muller).
pub fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u, v) = (unit(rng), unit(rng));
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// exp(N(0, sigma^2)).
pub fn lognormal(rng: &mut ChaCha8Rng, sigma: f64) -> f64 {
    (sigma * normal(rng)).exp()
}

/// Gamma(shape, 1) (Marsaglia and Tsang; shape < 1 boosted by U^(1/shape)).
pub fn gamma(rng: &mut ChaCha8Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        return gamma(rng, shape + 1.0) * unit(rng).powf(1.0 / shape.max(1e-12));
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = unit(rng);
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// Beta(a, b), a, b > 0, in (0, 1).
pub fn beta(rng: &mut ChaCha8Rng, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    if x + y > 0.0 {
        (x / (x + y)).clamp(1e-12, 1.0 - 1e-12)
    } else {
        a / (a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn beta_and_lognormal_have_their_means() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let n = 20_000;
        let (a, b) = (3.0, 7.0);
        let m = (0..n).map(|_| beta(&mut rng, a, b)).sum::<f64>() / n as f64;
        assert!((m - 0.3).abs() < 0.01, "{m}");
        let small = (0..n).map(|_| beta(&mut rng, 0.5, 0.5)).sum::<f64>() / n as f64;
        assert!((small - 0.5).abs() < 0.02, "{small}");
        let l = (0..n).map(|_| lognormal(&mut rng, 0.4)).sum::<f64>() / n as f64;
        assert!((l - (0.08f64).exp()).abs() < 0.02, "{l}");
    }
}
