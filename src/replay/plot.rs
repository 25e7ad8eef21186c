//! Minimal SVG plots (no plotting dependency): JCT CDF per scheme and GPU/CPU/memory allocation
//! over time. Text uses the viewer's sans-serif font.

use super::ReplaySummary;
use super::error::ReplayError;
use std::fmt::Write as _;
use std::path::Path;

const W: f64 = 720.0;
const H: f64 = 420.0;
const L: f64 = 70.0;
const R: f64 = 180.0;
const T: f64 = 30.0;
const B: f64 = 50.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

struct Axes {
    x_max: f64,
    y_max: f64,
}

impl Axes {
    fn x(&self, v: f64) -> f64 {
        L + (W - L - R) * (v / self.x_max).clamp(0.0, 1.0)
    }
    fn y(&self, v: f64) -> f64 {
        H - B - (H - T - B) * (v / self.y_max).clamp(0.0, 1.0)
    }
}

fn frame(o: &mut String, a: &Axes, title: &str, xlabel: &str, ylabel: &str) {
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="18" text-anchor="middle" font-size="14">{title}</text><text x="{}" y="{}" text-anchor="middle">{xlabel}</text><text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">{ylabel}</text>"#,
        (L + W - R) / 2.0,
        (L + W - R) / 2.0,
        H - 10.0,
        (T + H - B) / 2.0,
        (T + H - B) / 2.0
    );
    for i in 0..=5 {
        let fx = a.x_max * i as f64 / 5.0;
        let fy = a.y_max * i as f64 / 5.0;
        let _ = write!(
            o,
            r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#ddd"/><text x="{x}" y="{}" text-anchor="middle">{}</text><line x1="{L}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            T,
            H - B,
            H - B + 16.0,
            fmt(fx),
            W - R,
            L - 6.0,
            a.y(fy) + 4.0,
            fmt(fy),
            x = a.x(fx),
            y = a.y(fy),
        );
    }
}

fn fmt(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn series(o: &mut String, a: &Axes, pts: &[(f64, f64)], color: &str, label: &str, k: usize) {
    let mut d = String::new();
    for (i, (x, y)) in pts.iter().enumerate() {
        let _ = write!(
            d,
            "{}{:.1},{:.1}",
            if i == 0 { "M" } else { " L" },
            a.x(*x),
            a.y(*y)
        );
    }
    let ly = T + 16.0 * k as f64 + 10.0;
    let _ = write!(
        o,
        r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.5"/><line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{label}</text>"#,
        W - R + 10.0,
        W - R + 30.0,
        W - R + 36.0,
        ly + 4.0
    );
}

fn save(path: &Path, mut o: String) -> Result<(), ReplayError> {
    o.push_str("</svg>\n");
    std::fs::write(path, o).map_err(ReplayError::io(path))
}

/// `jct_cdf.svg` (all schemes) and `<policy>-<mechanism>.utilization.svg` into `dir`.
pub fn write_svgs(s: &ReplaySummary, dir: &Path) -> Result<(), ReplayError> {
    std::fs::create_dir_all(dir).map_err(ReplayError::io(dir))?;
    let jcts: Vec<Vec<f64>> = s
        .runs
        .iter()
        .map(|r| {
            let mut v: Vec<f64> = r
                .jobs
                .iter()
                .filter_map(|j| j.jct_s.map(|x| x / 3600.0))
                .collect();
            v.sort_by(f64::total_cmp);
            v
        })
        .collect();
    let x_max = jcts
        .iter()
        .flat_map(|v| v.last())
        .copied()
        .fold(1e-9, f64::max);
    let a = Axes { x_max, y_max: 1.0 };
    let mut o = String::new();
    frame(&mut o, &a, "JCT CDF", "JCT (hours)", "fraction of jobs");
    for (k, (r, v)) in s.runs.iter().zip(&jcts).enumerate() {
        let n = v.len().max(1) as f64;
        let pts: Vec<(f64, f64)> = v
            .iter()
            .enumerate()
            .map(|(i, x)| (*x, (i + 1) as f64 / n))
            .collect();
        let label = format!("{}+{}", r.summary.policy, r.summary.mechanism);
        series(&mut o, &a, &pts, COLORS[k % COLORS.len()], &label, k);
    }
    save(&dir.join("jct_cdf.svg"), o)?;
    for r in &s.runs {
        let t_max = r.rounds.last().map_or(1.0, |x| x.t / 3600.0).max(1e-9);
        let a = Axes {
            x_max: t_max,
            y_max: 100.0,
        };
        let mut o = String::new();
        let name = format!("{}+{}", r.summary.policy, r.summary.mechanism);
        frame(
            &mut o,
            &a,
            &format!("allocation over time, {name}"),
            "time (hours)",
            "% of cluster",
        );
        let (g, c, m) = cluster_totals(s, r);
        for (k, label) in ["GPU alloc", "GPU use", "CPU alloc", "mem alloc"]
            .into_iter()
            .enumerate()
        {
            let f = |x: &super::engine::RoundRow| match k {
                0 => x.gpus as f64 / g * 100.0,
                1 => x.gpu_use / g * 100.0,
                2 => x.cpus / c * 100.0,
                _ => x.mem_gb / m * 100.0,
            };
            let pts: Vec<(f64, f64)> = r.rounds.iter().map(|x| (x.t / 3600.0, f(x))).collect();
            series(&mut o, &a, &pts, COLORS[k], label, k);
        }
        save(
            &dir.join(format!(
                "{}-{}.utilization.svg",
                r.summary.policy, r.summary.mechanism
            )),
            o,
        )?;
    }
    Ok(())
}

fn cluster_totals(s: &ReplaySummary, _r: &super::RunResult) -> (f64, f64, f64) {
    (s.totals.0 as f64, s.totals.1, s.totals.2)
}
