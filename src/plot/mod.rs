//! Line charts through `plotters`, rendered to PNG and SVG by the same drawing code.
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

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
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

/// Axis scale. A logarithmic axis drops points at or below zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    /// Dashed line (to tell apart a line that often lies on another).
    pub dashed: bool,
    /// Stroke width in pixels (2 unless set with [`Chart::width`]).
    pub width: u32,
}

/// A line chart: title, axis labels, one line per series and a legend on the right of the plot.
/// Ranges default to the data's extent.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
    /// Pixels (PNG) or user units (SVG).
    pub size: (u32, u32),
    pub series: Vec<Series>,
}

impl Chart {
    pub fn new(title: impl Into<String>) -> Self {
        Chart {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            x_scale: Scale::Linear,
            x_range: None,
            y_range: None,
            size: (900, 500),
            series: Vec::new(),
        }
    }

    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = label.into();
        self
    }

    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = label.into();
        self
    }

    pub fn x_scale(mut self, scale: Scale) -> Self {
        self.x_scale = scale;
        self
    }

    pub fn x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x_range = Some((lo, hi));
        self
    }

    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width, height);
        self
    }

    /// Adds a line; points are joined in the order given.
    pub fn line(mut self, label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series {
            label: label.into(),
            points,
            dashed: false,
            width: 2,
        });
        self
    }

    /// Adds a dashed line.
    pub fn dashed_line(mut self, label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series {
            label: label.into(),
            points,
            dashed: true,
            width: 2,
        });
        self
    }

    /// Sets the stroke width of the last line added: a wide line drawn first stays visible
    /// around narrower ones drawn over it where they coincide.
    pub fn width(mut self, pixels: u32) -> Self {
        if let Some(s) = self.series.last_mut() {
            s.width = pixels.max(1);
        }
        self
    }

    /// Writes `path` as PNG. Drawn into an RGB buffer and encoded with our own `image` crate,
    /// so plotters needs no PNG encoder of its own (that would pull in a second `image`).
    pub fn save_png(&self, path: &Path) -> Result<(), PlotError> {
        register_font()?;
        let (w, h) = self.size;
        let mut buf = vec![0u8; w as usize * h as usize * 3];
        let draw_err = |message: String| PlotError::Draw {
            path: path.to_owned(),
            message,
        };
        {
            let root = BitMapBackend::with_buffer(&mut buf, self.size).into_drawing_area();
            self.draw(&root)
                .and_then(|()| root.present().map_err(|e| e.to_string()))
                .map_err(draw_err)?;
        }
        image::save_buffer(path, &buf, w, h, image::ExtendedColorType::Rgb8)
            .map_err(|e| draw_err(e.to_string()))
    }

    /// The chart as an SVG document.
    pub fn to_svg_string(&self) -> Result<String, PlotError> {
        register_font()?;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            self.draw(&root)
                .and_then(|()| root.present().map_err(|e| e.to_string()))
                .map_err(|message| PlotError::Draw {
                    path: PathBuf::from("<svg>"),
                    message,
                })?;
        }
        Ok(svg)
    }

    /// Writes `path` as SVG.
    pub fn save_svg(&self, path: &Path) -> Result<(), PlotError> {
        let svg = self.to_svg_string()?;
        std::fs::write(path, svg).map_err(|source| PlotError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Writes `dir/name.png` and `dir/name.svg`; returns both paths.
    pub fn save_png_and_svg(&self, dir: &Path, name: &str) -> Result<[PathBuf; 2], PlotError> {
        let png = dir.join(format!("{name}.png"));
        let svg = dir.join(format!("{name}.svg"));
        self.save_png(&png)?;
        self.save_svg(&svg)?;
        Ok([png, svg])
    }

    /// Draws the chart on any plotters backend.
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let root = root
            .titled(&self.title, (FONT_FAMILY, TITLE_SIZE))
            .map_err(e)?;
        let label_style = TextStyle::from((FONT_FAMILY, TEXT_SIZE).into_font());
        let mut legend_w = 0;
        for s in &self.series {
            let (w, _) = root.estimate_text_size(&s.label, &label_style).map_err(e)?;
            legend_w = legend_w.max(w);
        }
        let legend_w = if self.series.is_empty() {
            10
        } else {
            legend_w as i32 + LEGEND_SWATCH + 30
        };
        let (plot, legend) = root.split_horizontally(root.dim_in_pixel().0 as i32 - legend_w);
        let (x0, x1) = self.x_extent();
        match self.x_scale {
            Scale::Linear => self.draw_plot(&plot, x0..x1)?,
            Scale::Log => self.draw_plot(&plot, (x0..x1).log_scale())?,
        }
        for (k, s) in self.series.iter().enumerate() {
            let y = 20 + k as i32 * (TEXT_SIZE as i32 + 6);
            let style = color(k).stroke_width(s.width.clamp(3, 6));
            if s.dashed {
                for x in [4, 4 + LEGEND_SWATCH * 5 / 8] {
                    legend
                        .draw(&PathElement::new(
                            vec![(x, y), (x + LEGEND_SWATCH * 3 / 8, y)],
                            style,
                        ))
                        .map_err(e)?;
                }
            } else {
                legend
                    .draw(&PathElement::new(
                        vec![(4, y), (4 + LEGEND_SWATCH, y)],
                        style,
                    ))
                    .map_err(e)?;
            }
            legend
                .draw(&Text::new(
                    s.label.as_str(),
                    (10 + LEGEND_SWATCH, y),
                    label_style.pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(e)?;
        }
        Ok(())
    }

    fn draw_plot<DB, X>(&self, area: &DrawingArea<DB, Shift>, x: X) -> Result<(), String>
    where
        DB: DrawingBackend,
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let (y0, y1) = self.y_extent();
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(65)
            .build_cartesian_2d(x, y0..y1)
            .map_err(e)?;
        let fmt = |v: &f64| tick(*v);
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .label_style((FONT_FAMILY, TEXT_SIZE - 1))
            .axis_desc_style((FONT_FAMILY, TEXT_SIZE))
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
            .light_line_style(RGBColor(0xf2, 0xf2, 0xf2))
            .max_light_lines(4)
            .draw()
            .map_err(e)?;
        let log = self.x_scale == Scale::Log;
        for (k, s) in self.series.iter().enumerate() {
            let pts = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log || *x > 0.0))
                .map(|p| (p, chart.backend_coord(&p)));
            let style = color(k).stroke_width(s.width);
            let (pieces, joints) = split_sharp_turns(pts);
            for piece in pieces {
                if s.dashed {
                    chart
                        .draw_series(DashedLineSeries::new(piece, 8, 5, style))
                        .map_err(e)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(piece, style))
                        .map_err(e)?;
                }
            }
            if !s.dashed && s.width > 2 {
                // Round joins where the line was split.
                let dot = color(k).filled();
                let r = s.width / 2;
                chart
                    .draw_series(joints.into_iter().map(|p| Circle::new(p, r, dot)))
                    .map_err(e)?;
            }
        }
        Ok(())
    }

    fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let log = self.x_scale == Scale::Log;
        self.series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(move |(x, y)| x.is_finite() && y.is_finite() && (!log || *x > 0.0))
    }

    fn x_extent(&self) -> (f64, f64) {
        let (lo, hi) = self
            .x_range
            .unwrap_or_else(|| extent(self.points().map(|p| p.0)));
        match self.x_scale {
            Scale::Linear => widen(lo, hi),
            Scale::Log => {
                let lo = if lo > 0.0 { lo } else { hi.min(1.0) * 1e-3 };
                let hi = hi.max(lo);
                // A margin so that the extreme points do not sit on the frame.
                let pad = (hi / lo).powf(0.03).max(1.5_f64.sqrt());
                (lo / pad, hi * pad)
            }
        }
    }

    fn y_extent(&self) -> (f64, f64) {
        let (lo, hi) = self
            .y_range
            .unwrap_or_else(|| extent(self.points().map(|p| p.1)));
        widen(lo, hi)
    }
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

fn trim(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Splits a line (data points with their pixel positions) where it turns back by more than 90
/// degrees, and drops points on the same pixel as the one before. plotters rasterises a line
/// wider than one pixel as one polygon with mitred joins, and a sharp turn makes a long spike on
/// the inside of the turn; separate pieces have no join there. Returns the pieces and the split
/// points.
#[allow(clippy::type_complexity)]
fn split_sharp_turns(
    points: impl Iterator<Item = ((f64, f64), (i32, i32))>,
) -> (Vec<Vec<(f64, f64)>>, Vec<(f64, f64)>) {
    let mut pieces: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    let mut joints = Vec::new();
    let mut prev: Option<(i32, i32)> = None;
    let mut dir: Option<(i64, i64)> = None;
    for (p, c) in points {
        if let Some(q) = prev {
            if q == c {
                continue;
            }
            let d = (i64::from(c.0 - q.0), i64::from(c.1 - q.1));
            if let Some(d0) = dir
                && d0.0 * d.0 + d0.1 * d.1 < 0
            {
                let last = *pieces
                    .last()
                    .and_then(|v| v.last())
                    .expect("non-empty piece");
                joints.push(last);
                pieces.push(vec![last]);
            }
            dir = Some(d);
        }
        prev = Some(c);
        pieces.last_mut().expect("a piece").push(p);
    }
    (pieces, joints)
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
        assert_eq!(widen(f64::INFINITY, f64::NEG_INFINITY), (0.0, 1.0));
        let t = thin((0..1000).map(|i| (i as f64, 0.0)).collect(), 100);
        assert!(t.len() <= 101 && t[0].0 == 0.0 && t.last().unwrap().0 == 999.0);
    }

    #[test]
    fn sharp_turns_split() {
        let pts = [(0, 0), (10, 0), (10, 0), (20, 0), (0, 1), (0, 9)]
            .map(|(x, y)| ((x as f64, y as f64), (x, y)));
        let (pieces, joints) = split_sharp_turns(pts.into_iter());
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0], vec![(0.0, 0.0), (10.0, 0.0), (20.0, 0.0)]);
        assert_eq!(pieces[1], vec![(20.0, 0.0), (0.0, 1.0), (0.0, 9.0)]);
        assert_eq!(joints, vec![(20.0, 0.0)]);
    }

    #[test]
    fn svg_has_labels() {
        let svg = Chart::new("T")
            .x_label("xs")
            .x_scale(Scale::Log)
            .line("alpha", vec![(0.1, 0.0), (10.0, 1.0)])
            .line("beta", vec![])
            .to_svg_string()
            .unwrap();
        for s in ["alpha", "beta", "xs", "font-family=\"sans-serif\""] {
            assert!(svg.contains(s), "{s}");
        }
    }
}
