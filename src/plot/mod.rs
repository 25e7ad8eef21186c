//! Line charts (with point symbols, marks and reference lines) and heat maps through
//! `plotters`, rendered to PNG and SVG by the same drawing code ([`Figure`]);
//! [`sensitivity`] draws matrices with them.
//!
//! Text is drawn with DejaVu Sans, embedded in the binary (`assets/fonts/`, licence beside it)
//! and registered with plotters' `ab_glyph` font table under the family name `sans-serif`: no
//! system font library is used. PNG text is rasterised from that font; SVG text stays `<text>`
//! elements in `font-family="sans-serif"`, so SVG viewers use their own sans-serif font.
//!
//! ```no_run
//! use profiler::plot::{Chart, Scale};
//! let chart = Chart::new("JCT CDF")
//!     .x_label("JCT (hours)")
//!     .y_label("fraction of jobs")
//!     .x_scale(Scale::Log)
//!     .y_range(0.0, 1.0)
//!     .line("fifo", vec![(0.5, 0.1), (2.0, 0.6), (9.0, 1.0)]);
//! chart.save_png_and_svg(std::path::Path::new("out"), "jct_cdf")?;
//! # Ok::<(), profiler::plot::PlotError>(())
//! ```

mod chart;
mod heatmap;
mod label;
mod marker;
pub mod sensitivity;

pub use chart::{Chart, Mark, Scale, Series, VLine};

pub use heatmap::{
    FAILED_RED, HeatCell, HeatCellKind, Heatmap, REFERENCE_COLOR, Reference, STAR_GOLD,
};
pub use marker::{MarkerElement, MarkerShape};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Family name the embedded font is registered under; use it in every text style.
pub const FONT_FAMILY: &str = "sans-serif";

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Line colours in series order (matplotlib's tab10), repeated past ten series.
pub const COLORS: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// Font sizes as plotters takes them (it draws text at 1/1.24 of the size given).
const TITLE_SIZE: u32 = 26;
const TEXT_SIZE: u32 = 18;
const LEGEND_SWATCH: i32 = 24;

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("{path}: {message}")]
    Draw { path: PathBuf, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the embedded font (DejaVu Sans) could not be loaded")]
    Font,
}

/// Registers the embedded font with plotters once per process; every render calls it.
pub fn register_font() -> Result<(), PlotError> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_ok()
    });
    if ok { Ok(()) } else { Err(PlotError::Font) }
}

/// A legend entry that belongs to no series: explains a symbol or a line style.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendKey {
    pub label: String,
    /// Symbol: shape, colour, filled.
    pub marker: Option<(MarkerShape, RGBColor, bool)>,
    /// Line: colour, dashed.
    pub line: Option<(RGBColor, bool)>,
}

/// Height of a legend row, pixels.
const LEGEND_ROW: i32 = TEXT_SIZE as i32 + 6;

/// Radius of series symbols, pixels.
const MARKER_RADIUS: i32 = 5;

/// Something drawn once to PNG and SVG by the same code.
pub trait Figure {
    /// Pixels (PNG) or user units (SVG).
    fn size(&self) -> (u32, u32);

    /// Draws the figure on any plotters backend.
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;

    /// Writes `path` as PNG. Drawn into an RGB buffer and encoded with our own `image` crate,
    /// so plotters needs no PNG encoder of its own (that would pull in a second `image`).
    fn save_png(&self, path: &Path) -> Result<(), PlotError> {
        register_font()?;
        let (w, h) = self.size();
        let mut buf = vec![0u8; w as usize * h as usize * 3];
        let draw_err = |message: String| PlotError::Draw {
            path: path.to_owned(),
            message,
        };
        {
            let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
            self.draw_on(&root)
                .and_then(|()| root.present().map_err(|e| e.to_string()))
                .map_err(draw_err)?;
        }
        image::save_buffer(path, &buf, w, h, image::ExtendedColorType::Rgb8)
            .map_err(|e| draw_err(e.to_string()))
    }

    /// The figure as an SVG document.
    fn to_svg_string(&self) -> Result<String, PlotError> {
        register_font()?;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size()).into_drawing_area();
            self.draw_on(&root)
                .and_then(|()| root.present().map_err(|e| e.to_string()))
                .map_err(|message| PlotError::Draw {
                    path: PathBuf::from("<svg>"),
                    message,
                })?;
        }
        Ok(svg)
    }

    /// Writes `path` as SVG.
    fn save_svg(&self, path: &Path) -> Result<(), PlotError> {
        let svg = self.to_svg_string()?;
        std::fs::write(path, svg).map_err(|source| PlotError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Writes `dir/name.png` and `dir/name.svg`; returns both paths.
    fn save_png_and_svg(&self, dir: &Path, name: &str) -> Result<[PathBuf; 2], PlotError> {
        let png = dir.join(format!("{name}.png"));
        let svg = dir.join(format!("{name}.svg"));
        self.save_png(&png)?;
        self.save_svg(&svg)?;
        Ok([png, svg])
    }
}

/// Title, and a smaller grey subtitle under it (one line per line of text); returns the area
/// below them.
fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: Option<&str>,
) -> Result<DrawingArea<DB, Shift>, String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let root = root.titled(title, (FONT_FAMILY, TITLE_SIZE)).map_err(e)?;
    let style = TextStyle::from((FONT_FAMILY, TEXT_SIZE - 1).into_font())
        .color(&RGBColor(0x55, 0x55, 0x55));
    let mut root = root;
    for line in subtitle.into_iter().flat_map(str::lines) {
        root = root.titled(line, style.clone()).map_err(e)?;
    }
    Ok(root)
}

/// One legend row at height `y`: a line swatch (solid or dashed) and/or a symbol, then the text.
fn draw_key<DB: DrawingBackend>(
    legend: &DrawingArea<DB, Shift>,
    y: i32,
    key: &LegendKey,
    line_width: u32,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    if let Some((c, dashed)) = key.line {
        let style = c.stroke_width(line_width);
        let pieces: &[(i32, i32)] = if dashed {
            &[
                (4, LEGEND_SWATCH * 3 / 8),
                (4 + LEGEND_SWATCH * 5 / 8, LEGEND_SWATCH * 3 / 8),
            ]
        } else {
            &[(4, LEGEND_SWATCH)]
        };
        for &(x, len) in pieces {
            legend
                .draw(&PathElement::new(vec![(x, y), (x + len, y)], style))
                .map_err(e)?;
        }
    }
    if let Some((shape, c, filled)) = key.marker {
        let at = (4 + LEGEND_SWATCH / 2, y);
        legend
            .draw(&MarkerElement::new(at, shape, MARKER_RADIUS, c, filled))
            .map_err(e)?;
    }
    let style = TextStyle::from((FONT_FAMILY, TEXT_SIZE).into_font());
    for (i, line) in key.label.lines().enumerate() {
        legend
            .draw(&Text::new(
                line,
                (10 + LEGEND_SWATCH, y + i as i32 * LEGEND_ROW),
                style.pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(e)?;
    }
    Ok(())
}

/// Rows a legend label takes (one per line of text).
fn key_rows(label: &str) -> usize {
    label.lines().count().max(1)
}

fn color(k: usize) -> RGBColor {
    COLORS[k % COLORS.len()]
}

fn extent(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// An empty or single-valued range becomes a usable one.
fn widen(lo: f64, hi: f64) -> (f64, f64) {
    if !lo.is_finite() || !hi.is_finite() {
        (0.0, 1.0)
    } else if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

/// Tick label: no float noise, few digits.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        trim(format!("{v:.1}"))
    } else if a >= 0.01 {
        trim(format!("{v:.3}"))
    } else {
        format!("{v:.0e}")
    }
}

/// "Nice" tick values (1, 2 or 5 times a power of ten apart) inside [lo, hi], at most about
/// `max` of them.
pub fn nice_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let rough = (hi - lo) / max.max(1) as f64;
    let pow = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * pow)
        .find(|s| (hi - lo) / s <= max.max(1) as f64)
        .unwrap_or(10.0 * pow);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last)
        .map(|k| k as f64 * step)
        // No float noise (0.30000000000000004).
        .map(|v| (v / step).round() * step)
        .collect()
}

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// At most about `max` points of `points`, evenly spaced by index, first and last kept: keeps
/// SVGs of long replays small.
pub fn thin(points: Vec<(f64, f64)>, max: usize) -> Vec<(f64, f64)> {
    let n = points.len();
    if n <= max.max(2) {
        return points;
    }
    let step = n.div_ceil(max.max(2));
    let last = points[n - 1];
    let mut out: Vec<(f64, f64)> = points.into_iter().step_by(step).collect();
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_ranges() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(2.0), "2");
        assert_eq!(tick(12.5), "12.5");
        assert_eq!(tick(100.0), "100");
        assert_eq!(widen(1.0, 1.0), (0.5, 1.5));
        assert_eq!(nice_ticks(0.1, 2.4, 5), vec![0.5, 1.0, 1.5, 2.0]);
        assert_eq!(
            nice_ticks(0.0, 1000.0, 5),
            vec![0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]
        );
        assert_eq!(widen(f64::INFINITY, f64::NEG_INFINITY), (0.0, 1.0));
        let t = thin((0..1000).map(|i| (i as f64, 0.0)).collect(), 100);
        assert!(t.len() <= 101 && t[0].0 == 0.0 && t.last().unwrap().0 == 999.0);
    }
}
