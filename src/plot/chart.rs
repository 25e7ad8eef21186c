//! The line chart: series (with symbols, estimated stretches dashed), marks and reference
//! lines, its axes and its legend.

use super::label::LabelPlacer;
use super::{
    FONT_FAMILY, Figure, LEGEND_ROW, LEGEND_SWATCH, LegendKey, MARKER_RADIUS, MarkerElement,
    MarkerShape, PlotError, TEXT_SIZE, color, draw_key, extent, key_rows, tick, titled, widen,
};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// Stroke width of an error bar, and the width of its caps, pixels.
const INTERVAL_WIDTH: u32 = 1;
const INTERVAL_CAP: u32 = 8;

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
    /// Symbol drawn at each point, if any (set with [`Chart::markers`]).
    pub marker: Option<MarkerShape>,
    /// Per point: an estimate rather than a measurement, drawn with a hollow symbol and dashed
    /// segments to its neighbours. Empty: every point is a measurement.
    pub estimated: Vec<bool>,
    /// Per point: its 95% interval (low, high), drawn as an error bar. Empty or `None`: no bar.
    pub intervals: Vec<Option<(f64, f64)>>,
}

/// A symbol at one point of the plot, outside any series (a failure, an optimum), with an
/// optional text label placed beside it where it overlaps nothing else drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub at: (f64, f64),
    pub shape: MarkerShape,
    pub color: RGBColor,
    pub filled: bool,
    /// Radius in pixels.
    pub radius: i32,
    pub label: Option<String>,
}

/// A dashed vertical line across the plot at `x`, labelled near its top.
#[derive(Debug, Clone, PartialEq)]
pub struct VLine {
    pub x: f64,
    pub label: String,
    pub color: RGBColor,
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
    /// Tick positions on the x axis, each with a grid line (instead of plotters' own).
    pub x_ticks: Option<Vec<f64>>,
    pub y_range: Option<(f64, f64)>,
    /// Pixels (PNG) or user units (SVG).
    pub size: (u32, u32),
    pub series: Vec<Series>,
    /// Under the title, smaller and grey; may have several lines.
    pub subtitle: Option<String>,
    pub marks: Vec<Mark>,
    pub vlines: Vec<VLine>,
    /// Legend entries after the series'.
    pub keys: Vec<LegendKey>,
}

impl Chart {
    pub fn new(title: impl Into<String>) -> Self {
        Chart {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            x_scale: Scale::Linear,
            x_range: None,
            x_ticks: None,
            y_range: None,
            size: (900, 500),
            series: Vec::new(),
            subtitle: None,
            marks: Vec::new(),
            vlines: Vec::new(),
            keys: Vec::new(),
        }
    }

    pub fn subtitle(mut self, text: impl Into<String>) -> Self {
        self.subtitle = Some(text.into());
        self
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

    /// Ticks and grid lines at these x values only (e.g. the levels of a grid).
    pub fn x_ticks(mut self, ticks: Vec<f64>) -> Self {
        self.x_ticks = Some(ticks);
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

    /// Adds a line; points are joined in the order given. A point whose y is NaN is a gap: the
    /// line stops before it and starts again after it.
    pub fn line(mut self, label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series {
            label: label.into(),
            points,
            dashed: false,
            width: 2,
            marker: None,
            estimated: Vec::new(),
            intervals: Vec::new(),
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
            marker: None,
            estimated: Vec::new(),
            intervals: Vec::new(),
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

    /// Draws a symbol at each point of the last line added.
    pub fn markers(mut self, shape: MarkerShape) -> Self {
        if let Some(s) = self.series.last_mut() {
            s.marker = Some(shape);
        }
        self
    }

    /// Marks points of the last line added as estimates (one flag per point): hollow symbols,
    /// dashed segments to them.
    pub fn estimated(mut self, flags: Vec<bool>) -> Self {
        if let Some(s) = self.series.last_mut() {
            s.estimated = flags;
        }
        self
    }

    /// Gives points of the last line added their 95% intervals (one entry per point, `None`
    /// for none), drawn as error bars.
    pub fn intervals(mut self, bars: Vec<Option<(f64, f64)>>) -> Self {
        if let Some(s) = self.series.last_mut() {
            s.intervals = bars;
        }
        self
    }

    pub fn mark(mut self, mark: Mark) -> Self {
        self.marks.push(mark);
        self
    }

    pub fn vline(mut self, x: f64, label: impl Into<String>, color: RGBColor) -> Self {
        self.vlines.push(VLine {
            x,
            label: label.into(),
            color,
        });
        self
    }

    pub fn key(mut self, key: LegendKey) -> Self {
        self.keys.push(key);
        self
    }

    /// Writes `path` as PNG.
    pub fn save_png(&self, path: &Path) -> Result<(), PlotError> {
        Figure::save_png(self, path)
    }

    /// The chart as an SVG document.
    pub fn to_svg_string(&self) -> Result<String, PlotError> {
        Figure::to_svg_string(self)
    }

    /// Writes `path` as SVG.
    pub fn save_svg(&self, path: &Path) -> Result<(), PlotError> {
        Figure::save_svg(self, path)
    }

    /// Writes `dir/name.png` and `dir/name.svg`; returns both paths.
    pub fn save_png_and_svg(&self, dir: &Path, name: &str) -> Result<[PathBuf; 2], PlotError> {
        Figure::save_png_and_svg(self, dir, name)
    }

    /// Draws the chart on any plotters backend.
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let root = titled(root, &self.title, self.subtitle.as_deref())?;
        let label_style = TextStyle::from((FONT_FAMILY, TEXT_SIZE).into_font());
        let mut legend_w = 0;
        let labels = self.series.iter().map(|s| &s.label);
        for label in labels.chain(self.keys.iter().map(|k| &k.label)) {
            for line in label.lines() {
                let (w, _) = root.estimate_text_size(line, &label_style).map_err(e)?;
                legend_w = legend_w.max(w);
            }
        }
        let legend_w = if self.series.is_empty() && self.keys.is_empty() {
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
        let mut y = 20;
        for (k, s) in self.series.iter().enumerate() {
            let key = LegendKey {
                label: s.label.clone(),
                marker: s.marker.map(|m| (m, color(k), true)),
                line: Some((color(k), s.dashed)),
            };
            draw_key(&legend, y, &key, s.width.clamp(3, 6))?;
            y += key_rows(&s.label) as i32 * LEGEND_ROW;
        }
        // A gap between the series and the keys that explain symbols.
        if !self.series.is_empty() {
            y += LEGEND_ROW;
        }
        for key in &self.keys {
            draw_key(&legend, y, key, 2)?;
            y += key_rows(&key.label) as i32 * LEGEND_ROW;
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
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .label_style((FONT_FAMILY, TEXT_SIZE - 1))
            .axis_desc_style((FONT_FAMILY, TEXT_SIZE))
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
            .light_line_style(RGBColor(0xf2, 0xf2, 0xf2))
            .max_light_lines(4);
        let no_label = |_: &f64| String::new();
        if self.x_ticks.is_some() {
            // A log axis keeps a label at its start even with none asked for.
            mesh.x_labels(0)
                .disable_x_mesh()
                .x_label_formatter(&no_label)
                .set_tick_mark_size(LabelAreaPosition::Bottom, 0);
        }
        mesh.draw().map_err(e)?;
        let (px, py) = chart.plotting_area().get_pixel_range();
        let mut placer = LabelPlacer::new((px.start, py.start, px.end, py.end));
        self.draw_x_ticks(&mut chart, area, py.end)?;
        for v in self.vlines.iter().filter(|v| self.visible(&(v.x, y0))) {
            let style = v.color.stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new([(v.x, y0), (v.x, y1)], 6, 5, style))
                .map_err(e)?;
            let top = chart.backend_coord(&(v.x, y1));
            let bottom = chart.backend_coord(&(v.x, y0));
            placer.occupy_polyline(&[top, bottom], 3);
        }
        for (k, s) in self.series.iter().enumerate() {
            self.draw_one_series(&mut chart, &mut placer, k, s)?;
        }
        let marks: Vec<&Mark> = self.marks.iter().filter(|m| self.visible(&m.at)).collect();
        for m in &marks {
            placer.occupy_point(chart.backend_coord(&m.at), m.radius + 2);
        }
        for m in &marks {
            chart
                .draw_series(std::iter::once(MarkerElement::new(
                    m.at, m.shape, m.radius, m.color, m.filled,
                )))
                .map_err(e)?;
        }
        self.draw_labels(&chart, area, &mut placer, &marks)
    }

    /// Whether a point can be drawn (finite, and positive on a log axis).
    fn visible(&self, &(x, y): &(f64, f64)) -> bool {
        x.is_finite() && y.is_finite() && (self.x_scale != Scale::Log || x > 0.0)
    }

    /// The x axis's own ticks, where the chart has them: a grid line and a label each, a label
    /// that would touch the one before left out.
    fn draw_x_ticks<DB, XC>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<XC, RangedCoordf64>>,
        area: &DrawingArea<DB, Shift>,
        bottom: i32,
    ) -> Result<(), String>
    where
        DB: DrawingBackend,
        XC: Ranged<ValueType = f64>,
    {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let Some(ticks) = &self.x_ticks else {
            return Ok(());
        };
        let (y0, y1) = self.y_extent();
        let base = area.get_base_pixel();
        let text_style = TextStyle::from((FONT_FAMILY, TEXT_SIZE - 1).into_font());
        let (lo, hi) = self.x_extent();
        let grid = RGBColor(0xdd, 0xdd, 0xdd);
        let label_style = text_style.pos(Pos::new(HPos::Center, VPos::Top));
        let mut right_of_last = i32::MIN;
        for &t in ticks
            .iter()
            .filter(|&&t| self.visible(&(t, y0)) && t >= lo && t <= hi)
        {
            chart
                .draw_series(LineSeries::new([(t, y0), (t, y1)], grid))
                .map_err(e)?;
            let (x, _) = chart.backend_coord(&(t, y0));
            let label = tick(t);
            let (w, _) = area.estimate_text_size(&label, &text_style).map_err(e)?;
            let (x, y) = (x - base.0, bottom - base.1);
            area.draw(&PathElement::new(vec![(x, y), (x, y + 5)], BLACK))
                .map_err(e)?;
            if x - w as i32 / 2 > right_of_last + 6 {
                area.draw(&Text::new(label, (x, y + 10), label_style.clone()))
                    .map_err(e)?;
                right_of_last = x + w as i32 / 2;
            }
        }
        Ok(())
    }

    /// Series `k`: its line (a NaN y is a gap; dashed where its points are estimated, or
    /// throughout), round joins where a sharp turn split it, and its markers; what it covers
    /// is kept from labels.
    fn draw_one_series<DB, XC>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<XC, RangedCoordf64>>,
        placer: &mut LabelPlacer,
        k: usize,
        s: &Series,
    ) -> Result<(), String>
    where
        DB: DrawingBackend,
        XC: Ranged<ValueType = f64>,
    {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let estimated = |i: usize| s.estimated.get(i).copied().unwrap_or(false);
        let all: Vec<((f64, f64), bool)> = (0..s.points.len())
            .map(|i| (s.points[i], estimated(i)))
            .collect();
        let pieces: Vec<Vec<((f64, f64), bool)>> = all
            .split(|(p, _)| p.1.is_nan())
            .map(|piece| {
                (piece.iter().copied())
                    .filter(|(p, _)| self.visible(p))
                    .collect()
            })
            .collect();
        let style = color(k).stroke_width(s.width);
        for pts in &pieces {
            let pixels: Vec<(i32, i32)> = pts.iter().map(|(p, _)| chart.backend_coord(p)).collect();
            placer.occupy_polyline(&pixels, s.width as i32 / 2 + 2);
            for (dashed, run) in dash_runs(pts, s.dashed) {
                let run = run.into_iter().map(|p| (p, chart.backend_coord(&p)));
                let (turns, joints) = split_sharp_turns(run);
                for piece in turns {
                    if dashed {
                        chart
                            .draw_series(DashedLineSeries::new(piece, 8, 5, style))
                            .map_err(e)?;
                    } else {
                        chart
                            .draw_series(LineSeries::new(piece, style))
                            .map_err(e)?;
                    }
                }
                if !dashed && s.width > 2 {
                    // Round joins where the line was split.
                    let dot = color(k).filled();
                    let r = s.width / 2;
                    chart
                        .draw_series(joints.into_iter().map(|p| Circle::new(p, r, dot)))
                        .map_err(e)?;
                }
            }
        }
        self.draw_intervals(chart, placer, k, s)?;
        let pts: Vec<((f64, f64), bool)> = pieces.into_iter().flatten().collect();
        if let Some(shape) = s.marker {
            chart
                .draw_series(
                    pts.iter().map(|&(p, est)| {
                        MarkerElement::new(p, shape, MARKER_RADIUS, color(k), !est)
                    }),
                )
                .map_err(e)?;
            for (p, _) in &pts {
                placer.occupy_point(chart.backend_coord(p), MARKER_RADIUS + 2);
            }
        }
        Ok(())
    }

    /// Each point's interval as an error bar in the series' colour, under its symbol.
    fn draw_intervals<DB, XC>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<XC, RangedCoordf64>>,
        placer: &mut LabelPlacer,
        k: usize,
        s: &Series,
    ) -> Result<(), String>
    where
        DB: DrawingBackend,
        XC: Ranged<ValueType = f64>,
    {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let bars: Vec<(f64, f64, f64, f64)> = (s.points.iter().zip(&s.intervals))
            .filter_map(|(&(x, y), bar)| {
                let (lo, hi) = (*bar)?;
                (hi > lo && self.visible(&(x, y))).then_some((x, lo, y, hi))
            })
            .collect();
        for &(x, lo, _, hi) in &bars {
            let (top, bottom) = (chart.backend_coord(&(x, hi)), chart.backend_coord(&(x, lo)));
            placer.occupy_polyline(&[top, bottom], INTERVAL_CAP as i32 / 2 + 1);
        }
        let style = color(k).stroke_width(INTERVAL_WIDTH);
        chart
            .draw_series(
                bars.into_iter().map(|(x, lo, y, hi)| {
                    ErrorBar::new_vertical(x, lo, y, hi, style, INTERVAL_CAP)
                }),
            )
            .map_err(e)?;
        Ok(())
    }

    /// The reference lines' and the marks' labels, each where it covers the least, on a light
    /// backing so that a line it crosses does not strike it through.
    fn draw_labels<DB, XC>(
        &self,
        chart: &ChartContext<'_, DB, Cartesian2d<XC, RangedCoordf64>>,
        area: &DrawingArea<DB, Shift>,
        placer: &mut LabelPlacer,
        marks: &[&Mark],
    ) -> Result<(), String>
    where
        DB: DrawingBackend,
        XC: Ranged<ValueType = f64>,
    {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let (y0, y1) = self.y_extent();
        let base = area.get_base_pixel();
        let text_style = TextStyle::from((FONT_FAMILY, TEXT_SIZE - 1).into_font());
        let text_at = |text: &str, (x, y): (i32, i32), color: &RGBColor| {
            let (w, h) = area.estimate_text_size(text, &text_style).map_err(e)?;
            let (x, y) = (x - base.0, y - base.1);
            area.draw(&Rectangle::new(
                [(x - 2, y - 1), (x + w as i32 + 2, y + h as i32 + 1)],
                WHITE.mix(0.8).filled(),
            ))
            .map_err(e)?;
            area.draw(&Text::new(
                text,
                (x, y),
                text_style.color(color).pos(Pos::new(HPos::Left, VPos::Top)),
            ))
            .map_err(e)
        };
        for v in self.vlines.iter().filter(|v| self.visible(&(v.x, y0))) {
            let (w, h) = area.estimate_text_size(&v.label, &text_style).map_err(e)?;
            let (x, _) = chart.backend_coord(&(v.x, y1));
            if let Some(at) = placer.place_beside_line(x, (w as i32, h as i32)) {
                text_at(&v.label, at, &v.color)?;
            }
        }
        for m in marks {
            let Some(label) = &m.label else { continue };
            let (w, h) = area.estimate_text_size(label, &text_style).map_err(e)?;
            let c = chart.backend_coord(&m.at);
            let at = placer.place_beside_point(c, m.radius + 3, (w as i32, h as i32));
            text_at(label, at, &BLACK)?;
        }
        Ok(())
    }

    fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let log = self.x_scale == Scale::Log;
        // An interval's ends count, so that no bar runs off the plot.
        let ends = self.series.iter().flat_map(|s| {
            (s.points.iter().zip(&s.intervals))
                .filter_map(|(&(x, _), bar)| bar.map(|(lo, hi)| [(x, lo), (x, hi)]))
                .flatten()
        });
        self.series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .chain(ends)
            .chain(self.marks.iter().map(|m| m.at))
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

impl Figure for Chart {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        self.draw(root)
    }
}

/// Splits a line into runs drawn alike: a segment is dashed when the whole line is, or when
/// either end is an estimate. Consecutive runs share their joining point.
#[allow(clippy::type_complexity)]
fn dash_runs(points: &[((f64, f64), bool)], all_dashed: bool) -> Vec<(bool, Vec<(f64, f64)>)> {
    let mut runs: Vec<(bool, Vec<(f64, f64)>)> = Vec::new();
    for w in points.windows(2) {
        let dashed = all_dashed || w[0].1 || w[1].1;
        match runs.last_mut() {
            Some((d, run)) if *d == dashed => run.push(w[1].0),
            _ => runs.push((dashed, vec![w[0].0, w[1].0])),
        }
    }
    runs
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

#[cfg(test)]
mod tests {
    use super::*;

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
