//! A heat map of a grid of values (columns x rows of categories), each cell coloured on a
//! viridis scale and its value printed in it; estimated, failed, disturbed and missing cells
//! drawn apart, one cell outlined as the best, and a reference position pointed at on both axes.

use super::{
    FONT_FAMILY, Figure, LEGEND_ROW, LEGEND_SWATCH, LegendKey, MARKER_RADIUS, MarkerElement,
    MarkerShape, TEXT_SIZE, draw_key, key_rows, tick, titled,
};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// How a cell's value came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeatCellKind {
    Measured,
    /// Drawn with a corner mark and `~` before its value.
    Estimated,
    /// No value: hatched grey with a red x.
    Failed,
    /// Measured while other processes took the job's CPUs: a red ring in the corner and `!`
    /// before its value.
    Disturbed,
    /// Not in the data: blank.
    Missing,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeatCell {
    /// Coloured by this value; `None` for failed and missing cells.
    pub value: Option<f64>,
    /// Printed in the cell.
    pub text: String,
    /// Printed smaller under `text` where the cell has room: a measured cell's interval.
    pub detail: Option<String>,
    pub kind: HeatCellKind,
}

/// A reference position (the proportional share), pointed at on each axis where it lies
/// inside the grid; the cell under it is outlined dashed when it is on a cell centre.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// Fractional column index (`0.5` is the centre of the first column); `None`: off the grid.
    pub column: Option<f64>,
    /// Fractional row index, likewise.
    pub row: Option<f64>,
    /// Legend text.
    pub label: String,
}

/// Grid of cells; row 0 at the bottom.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    pub title: String,
    pub subtitle: Option<String>,
    pub x_label: String,
    pub y_label: String,
    /// Column labels, left to right.
    pub columns: Vec<String>,
    /// Row labels, bottom to top.
    pub rows: Vec<String>,
    /// Row-major: `cells[row * columns.len() + column]`.
    pub cells: Vec<HeatCell>,
    /// Caption of the colour scale.
    pub value_label: String,
    /// Cell (column, row) outlined as the best, with its legend text.
    pub best: Option<((usize, usize), String)>,
    pub reference: Option<Reference>,
    pub size: (u32, u32),
}

/// Viridis at nine stops (matplotlib's), interpolated linearly between them.
const VIRIDIS: [(u8, u8, u8); 9] = [
    (0x44, 0x01, 0x54),
    (0x47, 0x2c, 0x7a),
    (0x3b, 0x51, 0x8b),
    (0x2c, 0x71, 0x8e),
    (0x21, 0x90, 0x8d),
    (0x27, 0xad, 0x81),
    (0x5c, 0xc8, 0x63),
    (0xaa, 0xdc, 0x32),
    (0xfd, 0xe7, 0x25),
];

/// Colour of `t` in [0, 1] on the viridis scale.
pub fn viridis(t: f64) -> RGBColor {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |p: u8, q: u8| (f64::from(p) + (f64::from(q) - f64::from(p)) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

const FAILED_FILL: RGBColor = RGBColor(0xd9, 0xd9, 0xd9);
const HATCH: RGBColor = RGBColor(0xa6, 0xa6, 0xa6);
/// Failure marks: a brighter red than the series palette's, so a mark is never taken for a
/// series' symbol.
pub const FAILED_RED: RGBColor = RGBColor(0xe8, 0x00, 0x0b);
/// The best case's star.
pub const STAR_GOLD: RGBColor = RGBColor(0xff, 0xc1, 0x07);
/// The proportional share's line and pointers.
pub const REFERENCE_COLOR: RGBColor = RGBColor(0xe3, 0x1a, 0x8c);
const GREY_TEXT: RGBColor = RGBColor(0x55, 0x55, 0x55);

impl Heatmap {
    /// Value range of the colour scale: the cells' values, widened when empty or flat.
    pub fn value_range(&self) -> (f64, f64) {
        let (lo, hi) = self
            .cells
            .iter()
            .filter_map(|c| c.value)
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        super::widen(lo, hi)
    }

    fn keys(&self) -> Vec<LegendKey> {
        let has = |k: HeatCellKind| self.cells.iter().any(|c| c.kind == k);
        let mut keys = Vec::new();
        if has(HeatCellKind::Estimated) {
            keys.push(LegendKey {
                label: "~ modelled (corner mark)".into(),
                marker: Some((MarkerShape::Triangle, BLACK, true)),
                line: None,
            });
        }
        if has(HeatCellKind::Failed) {
            keys.push(LegendKey {
                label: "failed / infeasible".into(),
                marker: Some((MarkerShape::Cross, FAILED_RED, false)),
                line: None,
            });
        }
        if has(HeatCellKind::Disturbed) {
            keys.push(LegendKey {
                label: "! disturbed: other processes\ntook the job's CPUs".into(),
                marker: Some((MarkerShape::Ring, FAILED_RED, false)),
                line: None,
            });
        }
        if let Some((_, label)) = &self.best {
            keys.push(LegendKey {
                label: label.clone(),
                marker: Some((MarkerShape::Star, STAR_GOLD, true)),
                line: None,
            });
        }
        if let Some(r) = &self.reference {
            keys.push(LegendKey {
                label: r.label.clone(),
                marker: Some((MarkerShape::Triangle, REFERENCE_COLOR, true)),
                line: None,
            });
        }
        keys
    }
}

/// Where a heatmap's parts go, in pixels.
struct Layout {
    /// The grid of cells.
    left: i32,
    right: i32,
    top: i32,
    bottom: i32,
    ncol: usize,
    nrow: usize,
    cw: f64,
    ch: f64,
    /// The whole drawing, a line of text, and where the legend column starts.
    h: i32,
    text_h: i32,
    legend_x: i32,
}

impl Layout {
    fn col_x(&self, c: f64) -> i32 {
        self.left + (c * self.cw).round() as i32
    }

    fn row_y(&self, r: f64) -> i32 {
        self.bottom - (r * self.ch).round() as i32
    }

    /// The corners of cell (`c`, `r`), top left then bottom right.
    fn cell_rect(&self, c: usize, r: usize) -> ((i32, i32), (i32, i32)) {
        (
            (self.col_x(c as f64), self.row_y(r as f64 + 1.0)),
            (self.col_x(c as f64 + 1.0), self.row_y(r as f64)),
        )
    }
}

fn text_style() -> TextStyle<'static> {
    TextStyle::from((FONT_FAMILY, TEXT_SIZE).into_font())
}

fn small_style() -> TextStyle<'static> {
    TextStyle::from((FONT_FAMILY, TEXT_SIZE - 1).into_font())
}

impl Heatmap {
    /// The layout on `root`: the legend column on the right sized for the colour bar's ticks
    /// and the keys, the grid left of it with room for the axes; `None` with nothing to draw.
    fn layout<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        bar_ticks: &[f64],
        keys: &[LegendKey],
    ) -> Result<Option<Layout>, String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let (text, small) = (text_style(), small_style());
        let size_of = |s: &str, style: &TextStyle| -> Result<(i32, i32), String> {
            let (w, h) = root.estimate_text_size(s, style).map_err(e)?;
            Ok((w as i32, h as i32))
        };
        let (w, h) = {
            let (w, h) = root.dim_in_pixel();
            (w as i32, h as i32)
        };
        let mut legend_w = 0;
        for t in bar_ticks {
            legend_w = legend_w.max(22 + 8 + size_of(&tick(*t), &small)?.0);
        }
        legend_w = legend_w.max(size_of(&self.value_label, &small)?.0);
        for line in keys.iter().flat_map(|k| k.label.lines()) {
            legend_w = legend_w.max(LEGEND_SWATCH + 10 + size_of(line, &text)?.0);
        }
        let legend_x = w - legend_w - 15;
        let mut ytick_w = 0;
        for r in &self.rows {
            ytick_w = ytick_w.max(size_of(r, &small)?.0);
        }
        let (_, text_h) = size_of("0.9Ay", &text)?;
        let (ncol, nrow) = (self.columns.len(), self.rows.len());
        let left = 10 + text_h + 10 + ytick_w + 16;
        let right = legend_x - 25;
        let top = 10;
        let bottom = h - (10 + text_h + 10 + text_h + 8);
        if ncol == 0 || nrow == 0 || right <= left || bottom <= top {
            return Ok(None);
        }
        Ok(Some(Layout {
            left,
            right,
            top,
            bottom,
            ncol,
            nrow,
            cw: f64::from(right - left) / ncol as f64,
            ch: f64::from(bottom - top) / nrow as f64,
            h,
            text_h,
            legend_x,
        }))
    }

    /// Every cell: its colour, its marks (failed, estimated, disturbed) and its value.
    fn draw_cells<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        l: &Layout,
        (lo, hi): (f64, f64),
    ) -> Result<(), String> {
        for r in 0..l.nrow {
            for c in 0..l.ncol {
                if let Some(cell) = self.cells.get(r * l.ncol + c) {
                    let (p0, p1) = l.cell_rect(c, r);
                    draw_cell(root, cell, p0, p1, (lo, hi))?;
                }
            }
        }
        Ok(())
    }

    /// The reference: a dashed frame on its cell where it is a grid point, and pointers on
    /// the axes.
    fn draw_reference<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        l: &Layout,
    ) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let Some(Reference {
            column: fc,
            row: fr,
            ..
        }) = &self.reference
        else {
            return Ok(());
        };
        // The cell under the reference, when it is a grid point.
        let on_centre = |f: f64, n: usize| {
            let i = (f - 0.5).round();
            ((f - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n).then_some(i as usize)
        };
        if let (Some(c), Some(r)) = (
            fc.and_then(|f| on_centre(f, l.ncol)),
            fr.and_then(|f| on_centre(f, l.nrow)),
        ) {
            let (p0, p1) = l.cell_rect(c, r);
            let pts = vec![
                (p0.0 + 2, p0.1 + 2),
                (p1.0 - 2, p0.1 + 2),
                (p1.0 - 2, p1.1 - 2),
                (p0.0 + 2, p1.1 - 2),
                (p0.0 + 2, p0.1 + 2),
            ];
            root.draw(&DashedPathElement::new(
                pts,
                6,
                4,
                REFERENCE_COLOR.stroke_width(3),
            ))
            .map_err(e)?;
        }
        // Pointers on the axes, just outside the grid.
        if let Some(f) = fc.filter(|f| (0.0..=l.ncol as f64).contains(f)) {
            let x = l.left + (f * l.cw).round() as i32;
            let tip = [
                (x, l.bottom + 1),
                (x - 6, l.bottom + 11),
                (x + 6, l.bottom + 11),
            ];
            root.draw(&Polygon::new(tip.to_vec(), REFERENCE_COLOR.filled()))
                .map_err(e)?;
        }
        if let Some(f) = fr.filter(|f| (0.0..=l.nrow as f64).contains(f)) {
            let y = l.bottom - (f * l.ch).round() as i32;
            let tip = [(l.left - 1, y), (l.left - 11, y - 6), (l.left - 11, y + 6)];
            root.draw(&Polygon::new(tip.to_vec(), REFERENCE_COLOR.filled()))
                .map_err(e)?;
        }
        Ok(())
    }

    /// The white lines between cells, the best case's frame and star, and the grid's border.
    fn draw_frames<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        l: &Layout,
    ) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        for c in 1..l.ncol {
            let x = l.col_x(c as f64);
            root.draw(&PathElement::new(
                vec![(x, l.top), (x, l.bottom)],
                WHITE.stroke_width(1),
            ))
            .map_err(e)?;
        }
        for r in 1..l.nrow {
            let y = l.row_y(r as f64);
            root.draw(&PathElement::new(
                vec![(l.left, y), (l.right, y)],
                WHITE.stroke_width(1),
            ))
            .map_err(e)?;
        }
        self.draw_reference(root, l)?;
        if let Some(((c, r), _)) = &self.best
            && *c < l.ncol
            && *r < l.nrow
        {
            let (p0, p1) = l.cell_rect(*c, *r);
            root.draw(&Rectangle::new([p0, p1], BLACK.stroke_width(3)))
                .map_err(e)?;
            root.draw(&MarkerElement::new(
                (p0.0 + 14, p0.1 + 14),
                MarkerShape::Star,
                MARKER_RADIUS + 3,
                STAR_GOLD,
                true,
            ))
            .map_err(e)?;
        }
        root.draw(&Rectangle::new(
            [(l.left, l.top), (l.right, l.bottom)],
            BLACK.stroke_width(1),
        ))
        .map_err(e)?;
        Ok(())
    }

    /// Category labels centred on their cells, and the axes' descriptions outside them.
    fn draw_axes<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        l: &Layout,
    ) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let (text, small) = (text_style(), small_style());
        let below = small.pos(Pos::new(HPos::Center, VPos::Top));
        for (c, label) in self.columns.iter().enumerate() {
            let x = l.col_x(c as f64 + 0.5);
            root.draw(&Text::new(
                label.as_str(),
                (x, l.bottom + 13),
                below.clone(),
            ))
            .map_err(e)?;
        }
        let beside = small.pos(Pos::new(HPos::Right, VPos::Center));
        for (r, label) in self.rows.iter().enumerate() {
            let y = l.row_y(r as f64 + 0.5);
            root.draw(&Text::new(label.as_str(), (l.left - 16, y), beside.clone()))
                .map_err(e)?;
        }
        root.draw(&Text::new(
            self.x_label.as_str(),
            ((l.left + l.right) / 2, l.h - 10 - l.text_h),
            text.pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(e)?;
        root.draw(&Text::new(
            self.y_label.as_str(),
            (10, (l.top + l.bottom) / 2),
            text.transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(e)?;
        Ok(())
    }

    /// The legend column: the colour bar with its caption and ticks, then the keys.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        l: &Layout,
        (lo, hi): (f64, f64),
        bar_ticks: &[f64],
        keys: &[LegendKey],
    ) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        let small = small_style();
        let x = l.legend_x;
        let (bar_top, bar_bottom) = (
            l.top + l.text_h + 8,
            l.top + l.text_h + 8 + (l.h / 3).max(60),
        );
        root.draw(&Text::new(
            self.value_label.as_str(),
            (x, l.top),
            small.color(&GREY_TEXT),
        ))
        .map_err(e)?;
        let steps = (bar_bottom - bar_top).max(1);
        for k in 0..steps {
            let t = 1.0 - f64::from(k) / f64::from(steps - 1).max(1.0);
            let y = bar_top + k;
            root.draw(&Rectangle::new(
                [(x, y), (x + 22, y + 1)],
                viridis(t).filled(),
            ))
            .map_err(e)?;
        }
        root.draw(&Rectangle::new(
            [(x, bar_top), (x + 22, bar_bottom)],
            BLACK.stroke_width(1),
        ))
        .map_err(e)?;
        let tick_style = small.pos(Pos::new(HPos::Left, VPos::Center));
        for t in bar_ticks {
            let f = (t - lo) / (hi - lo);
            let y = bar_bottom - (f * f64::from(bar_bottom - bar_top)).round() as i32;
            root.draw(&PathElement::new(
                vec![(x + 22, y), (x + 27, y)],
                BLACK.stroke_width(1),
            ))
            .map_err(e)?;
            root.draw(&Text::new(tick(*t), (x + 30, y), tick_style.clone()))
                .map_err(e)?;
        }
        let keys_area = root.margin(bar_bottom + 20, 0, x - 4, 0);
        let mut y = 10;
        for key in keys {
            draw_key(&keys_area, y, key, 2)?;
            y += key_rows(&key.label) as i32 * LEGEND_ROW + 2;
        }
        Ok(())
    }
}

/// One cell at `p0`-`p1`: its colour on the value scale `lo`-`hi`, hatched with a cross where
/// it failed, a corner notch where it is estimated, a red ring where it was disturbed, and its
/// value.
fn draw_cell<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    cell: &HeatCell,
    p0: (i32, i32),
    p1: (i32, i32),
    (lo, hi): (f64, f64),
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let centre = ((p0.0 + p1.0) / 2, (p0.1 + p1.1) / 2);
    let fill = match (cell.kind, cell.value) {
        (HeatCellKind::Failed, _) => FAILED_FILL,
        (HeatCellKind::Missing, _) | (_, None) => WHITE,
        (_, Some(v)) => viridis((v - lo) / (hi - lo)),
    };
    root.draw(&Rectangle::new([p0, p1], fill.filled()))
        .map_err(e)?;
    if cell.kind == HeatCellKind::Failed {
        hatch(root, p0, p1)?;
        let r = ((p1.0 - p0.0).min(p1.1 - p0.1) / 5).clamp(4, 12);
        let at = (centre.0, centre.1 - r - 2);
        root.draw(&MarkerElement::new(
            at,
            MarkerShape::Cross,
            r,
            FAILED_RED,
            false,
        ))
        .map_err(e)?;
    }
    let ink = if luminance(fill) > 0.45 { BLACK } else { WHITE };
    if cell.kind == HeatCellKind::Estimated {
        // Corner notch: estimated, not measured.
        let n = ((p1.0 - p0.0).min(p1.1 - p0.1) / 8).clamp(4, 8);
        root.draw(&Polygon::new(
            vec![
                (p1.0 - 1, p1.1 - 1),
                (p1.0 - 1 - n, p1.1 - 1),
                (p1.0 - 1, p1.1 - 1 - n),
            ],
            ink.filled(),
        ))
        .map_err(e)?;
    }
    if cell.kind == HeatCellKind::Disturbed {
        // Top right (the best case's star takes the top left corner), white inside so it
        // shows on dark cells too.
        let r = ((p1.0 - p0.0).min(p1.1 - p0.1) / 6).clamp(5, 10);
        let at = (p1.0 - r - 5, p0.1 + r + 5);
        root.draw(&MarkerElement::new(
            at,
            MarkerShape::Circle,
            r,
            FAILED_RED,
            false,
        ))
        .map_err(e)?;
    }
    let text_at = if cell.kind == HeatCellKind::Failed {
        (centre.0, centre.1 + 10)
    } else {
        centre
    };
    let value_style = TextStyle::from((FONT_FAMILY, TEXT_SIZE - 2).into_font())
        .pos(Pos::new(HPos::Center, VPos::Center));
    // The detail goes under the value where the cell is tall enough for two lines.
    let detail = cell
        .detail
        .as_deref()
        .filter(|_| p1.1 - p0.1 >= 2 * TEXT_SIZE as i32 + 4);
    let shift = if detail.is_some() {
        TEXT_SIZE as i32 / 2
    } else {
        0
    };
    root.draw(&Text::new(
        cell.text.as_str(),
        (text_at.0, text_at.1 - shift),
        value_style.color(&ink),
    ))
    .map_err(e)?;
    if let Some(detail) = detail {
        let small = TextStyle::from((FONT_FAMILY, TEXT_SIZE - 5).into_font())
            .pos(Pos::new(HPos::Center, VPos::Center));
        root.draw(&Text::new(
            detail,
            (text_at.0, text_at.1 + shift + 2),
            small.color(&ink),
        ))
        .map_err(e)?;
    }
    Ok(())
}

impl Figure for Heatmap {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let root = titled(root, &self.title, self.subtitle.as_deref())?;
        let keys = self.keys();
        let range = self.value_range();
        let bar_ticks = super::nice_ticks(range.0, range.1, 5);
        let Some(layout) = self.layout(&root, &bar_ticks, &keys)? else {
            return Ok(());
        };
        self.draw_cells(&root, &layout, range)?;
        self.draw_frames(&root, &layout)?;
        self.draw_axes(&root, &layout)?;
        self.draw_legend(&root, &layout, range, &bar_ticks, &keys)
    }
}

/// Diagonal hatching across a cell.
fn hatch<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    p0: (i32, i32),
    p1: (i32, i32),
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let (w, h) = (p1.0 - p0.0, p1.1 - p0.1);
    let mut d = 6;
    while d < w + h {
        // The line x + y = d (cell coordinates), clipped to the cell.
        let a = (p0.0 + d.min(w), p0.1 + (d - w).max(0));
        let b = (p0.0 + (d - h).max(0), p0.1 + d.min(h));
        root.draw(&PathElement::new(vec![a, b], HATCH.stroke_width(1)))
            .map_err(e)?;
        d += 9;
    }
    Ok(())
}

/// Relative luminance (0 dark .. 1 light), to choose the text colour on a fill.
fn luminance(c: RGBColor) -> f64 {
    (0.2126 * f64::from(c.0) + 0.7152 * f64::from(c.1) + 0.0722 * f64::from(c.2)) / 255.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_ends_and_middle() {
        assert_eq!(viridis(0.0), RGBColor(0x44, 0x01, 0x54));
        assert_eq!(viridis(1.0), RGBColor(0xfd, 0xe7, 0x25));
        assert_eq!(viridis(0.5), RGBColor(0x21, 0x90, 0x8d));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        assert!(luminance(viridis(0.0)) < 0.45 && luminance(viridis(1.0)) > 0.45);
    }
}
