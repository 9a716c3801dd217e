//! Small raster charts for the benchmarks' PNGs (`texset bench rd`): panels side by side, each
//! with axes, "nice" ticks and series of points (optionally joined), and one legend beneath.
//! Text is egui's bundled Hack font rasterised with `ab_glyph`, so drawing needs no system fonts.

use ab_glyph::{Font as _, FontRef, PxScale, ScaleFont as _};
use image::{Rgb, RgbImage};

/// How a series' points are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Marker {
    /// A filled disc.
    Circle,
    /// A filled square.
    Square,
    /// A filled triangle, point up.
    Triangle,
}

/// Points of one kind in one panel.
#[derive(Clone, Debug)]
pub(super) struct Series {
    /// Colour, sRGB.
    pub colour: [u8; 3],
    /// Marker.
    pub marker: Marker,
    /// Whether consecutive points are joined by a line.
    pub joined: bool,
    /// Points, data units.
    pub points: Vec<(f64, f64)>,
}

/// One chart.
#[derive(Clone, Debug)]
pub(super) struct Panel {
    /// Title above it.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// What it shows.
    pub series: Vec<Series>,
}

/// One legend line: a swatch (a marker, a line or both) and its text.
#[derive(Clone, Debug)]
pub(super) struct LegendEntry {
    /// Text.
    pub label: String,
    /// Colour of the swatch.
    pub colour: [u8; 3],
    /// Marker of the swatch, if any.
    pub marker: Option<Marker>,
    /// Whether the swatch has a line.
    pub line: bool,
}

/// One measured point of a chart per set: its set, its series, x, and both dB figures.
pub(super) struct DbPoint<'a> {
    /// The set (a panel pair).
    pub set: &'a str,
    /// The series within the set's panels.
    pub series: &'a str,
    /// Position on the x axis.
    pub x: f64,
    /// PSNR of the maps, dB.
    pub psnr_db: f64,
    /// PSNR of the lit renders, dB.
    pub rendered_psnr_db: f64,
}

/// `values` without repeats, in order of first appearance.
pub(super) fn distinct<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen
}

/// Two panels per set of `points`, in order of first appearance: PSNR and rendered PSNR against
/// `x_label`, one series per name in `series` (in that order), drawn as `style` says (colour,
/// marker, joined), its points sorted by x.
pub(super) fn psnr_panels(
    points: &[DbPoint<'_>],
    series: &[&str],
    x_label: &str,
    style: impl Fn(&str) -> ([u8; 3], Marker, bool),
) -> Vec<Panel> {
    let mut panels = Vec::new();
    for set in distinct(points.iter().map(|p| p.set)) {
        for (title, y) in [("PSNR", (|p: &DbPoint<'_>| p.psnr_db) as fn(&DbPoint<'_>) -> f64), ("rendered PSNR", |p| p.rendered_psnr_db)] {
            let series = series
                .iter()
                .map(|&name| {
                    let (colour, marker, joined) = style(name);
                    let mut v: Vec<(f64, f64)> = points.iter().filter(|p| p.set == set && p.series == name).map(|p| (p.x, y(p))).collect();
                    v.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Series { colour, marker, joined, points: v }
                })
                .collect();
            panels.push(Panel { title: format!("{set}: {title}"), x_label: x_label.to_owned(), y_label: "dB".to_owned(), series });
        }
    }
    panels
}

const MARGIN_LEFT: f32 = 64.0;
const MARGIN_RIGHT: f32 = 18.0;
const MARGIN_TOP: f32 = 34.0;
const MARGIN_BOTTOM: f32 = 46.0;
const TEXT_PX: f32 = 14.0;
const LEGEND_ROW_PX: u32 = 20;
const INK: [u8; 3] = [30, 30, 30];
const GRID: [u8; 3] = [225, 225, 225];

/// Draws `panels` in rows of `per_row` (left to right, then down), each `panel_w`×`panel_h`
/// pixels, with `legend` in columns below.
pub(super) fn render_grid(
    panels: &[Panel],
    per_row: usize,
    legend: &[LegendEntry],
    panel_w: u32,
    panel_h: u32,
) -> anyhow::Result<RgbImage> {
    let font =
        FontRef::try_from_slice(epaint_default_fonts::HACK_REGULAR).map_err(|e| anyhow::anyhow!("the chart font did not load: {e}"))?;
    let per_row = per_row.clamp(1, panels.len().max(1));
    let rows = panels.len().div_ceil(per_row).max(1) as u32;
    let width = panel_w * per_row as u32;
    // Columns as wide as the longest label (the font is monospaced: about 0.6 em a character).
    let label_px = legend.iter().map(|e| e.label.chars().count()).max().unwrap_or(0) as f32 * TEXT_PX * 0.62 + 52.0;
    let columns = (width / (label_px.ceil() as u32).max(240)).max(1);
    let legend_rows = (legend.len() as u32).div_ceil(columns);
    let panels_h = panel_h * rows;
    let height = panels_h + legend_rows * LEGEND_ROW_PX + 12;
    let mut canvas = Canvas { image: RgbImage::from_pixel(width, height, Rgb([255, 255, 255])), font };
    for (i, panel) in panels.iter().enumerate() {
        let (col, row) = ((i % per_row) as f32, (i / per_row) as f32);
        canvas.panel(panel, (col * panel_w as f32, row * panel_h as f32), panel_w as f32, panel_h as f32);
    }
    let column_w = width as f32 / columns as f32;
    for (i, entry) in legend.iter().enumerate() {
        let (col, row) = (i as u32 % columns, i as u32 / columns);
        let x = col as f32 * column_w + 16.0;
        let y = panels_h as f32 + 6.0 + row as f32 * LEGEND_ROW_PX as f32 + LEGEND_ROW_PX as f32 / 2.0;
        if entry.line {
            canvas.line((x, y), (x + 28.0, y), 2.0, entry.colour);
        }
        if let Some(marker) = entry.marker {
            canvas.marker(marker, (x + 14.0, y), entry.colour);
        }
        canvas.text(&entry.label, x + 36.0, y + TEXT_PX * 0.35, INK);
    }
    Ok(canvas.image)
}

/// Ticks at 1, 2 or 5 × 10^k covering `lo..=hi`, about `target` of them.
#[must_use]
pub(super) fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(10.0 * magnitude);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10()).ceil() as usize };
    format!("{v:.decimals$}")
}

struct Canvas<'f> {
    image: RgbImage,
    font: FontRef<'f>,
}

impl Canvas<'_> {
    fn blend(&mut self, x: i64, y: i64, colour: [u8; 3], coverage: f32) {
        if x < 0 || y < 0 || x >= i64::from(self.image.width()) || y >= i64::from(self.image.height()) || coverage <= 0.0 {
            return;
        }
        let a = coverage.min(1.0);
        let p = self.image.get_pixel_mut(x as u32, y as u32);
        for (c, &s) in p.0.iter_mut().zip(&colour) {
            *c = (f32::from(*c) * (1.0 - a) + f32::from(s) * a).round() as u8;
        }
    }

    /// Antialiased line of `width` pixels: coverage from the distance to the segment.
    fn line(&mut self, a: (f32, f32), b: (f32, f32), width: f32, colour: [u8; 3]) {
        let r = width / 2.0 + 1.0;
        let (x0, x1) = ((a.0.min(b.0) - r).floor() as i64, (a.0.max(b.0) + r).ceil() as i64);
        let (y0, y1) = ((a.1.min(b.1) - r).floor() as i64, (a.1.max(b.1) + r).ceil() as i64);
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len2 = (dx * dx + dy * dy).max(1e-6);
        for y in y0..=y1 {
            for x in x0..=x1 {
                let (px, py) = (x as f32 + 0.5, y as f32 + 0.5);
                let t = (((px - a.0) * dx + (py - a.1) * dy) / len2).clamp(0.0, 1.0);
                let d = ((px - a.0 - t * dx).powi(2) + (py - a.1 - t * dy).powi(2)).sqrt();
                self.blend(x, y, colour, width / 2.0 + 0.5 - d);
            }
        }
    }

    fn marker(&mut self, marker: Marker, c: (f32, f32), colour: [u8; 3]) {
        const R: f32 = 5.0;
        for y in (c.1 - R - 1.0).floor() as i64..=(c.1 + R + 1.0).ceil() as i64 {
            for x in (c.0 - R - 1.0).floor() as i64..=(c.0 + R + 1.0).ceil() as i64 {
                let (px, py) = (x as f32 + 0.5 - c.0, y as f32 + 0.5 - c.1);
                // Signed distance inside (positive) the shape's edge.
                let inside = match marker {
                    Marker::Circle => R - (px * px + py * py).sqrt(),
                    Marker::Square => (R * 0.85 - px.abs()).min(R * 0.85 - py.abs()),
                    Marker::Triangle => {
                        // Equilateral, circumradius r, centred: each edge is r/2 from the centre
                        // along its outward normal (down for the base, ±30° up for the sides).
                        let (r, s) = (R * 1.2, 3f32.sqrt() / 2.0);
                        let base = r / 2.0 - py;
                        let right = r / 2.0 - (s * px - 0.5 * py);
                        let left = r / 2.0 - (-s * px - 0.5 * py);
                        base.min(left).min(right)
                    }
                };
                self.blend(x, y, colour, inside + 0.5);
            }
        }
    }

    /// Text with its baseline at `y`, starting at `x`.
    fn text(&mut self, text: &str, x: f32, y: f32, colour: [u8; 3]) {
        let font = self.font.clone();
        let scaled = font.as_scaled(PxScale::from(TEXT_PX));
        let mut pen = x;
        for ch in text.chars() {
            let id = scaled.glyph_id(ch);
            let glyph = id.with_scale_and_position(PxScale::from(TEXT_PX), ab_glyph::point(pen, y));
            pen += scaled.h_advance(id);
            if let Some(outline) = font.outline_glyph(glyph) {
                let bounds = outline.px_bounds();
                let (bx, by) = (bounds.min.x as i64, bounds.min.y as i64);
                outline.draw(|gx, gy, c| self.blend(bx + i64::from(gx), by + i64::from(gy), colour, c));
            }
        }
    }

    fn text_width(&self, text: &str) -> f32 {
        let scaled = self.font.as_scaled(PxScale::from(TEXT_PX));
        text.chars().map(|c| scaled.h_advance(scaled.glyph_id(c))).sum()
    }

    /// Text turned a quarter left (reading bottom to top), centred on `(cx, cy)`.
    fn text_vertical(&mut self, text: &str, cx: f32, cy: f32, colour: [u8; 3]) {
        let w = self.text_width(text).ceil() as u32 + 2;
        let h = (TEXT_PX * 1.4).ceil() as u32;
        let mut scratch = Canvas { image: RgbImage::from_pixel(w, h, Rgb([255, 255, 255])), font: self.font.clone() };
        scratch.text(text, 1.0, TEXT_PX, [0, 0, 0]);
        let (x0, y0) = ((cx - h as f32 / 2.0) as i64, (cy - w as f32 / 2.0) as i64);
        for (sx, sy, p) in scratch.image.enumerate_pixels() {
            let coverage = 1.0 - f32::from(p.0[0]) / 255.0;
            // (sx, sy) → (sy, w − 1 − sx): a quarter turn anticlockwise.
            self.blend(x0 + i64::from(sy), y0 + i64::from(w - 1 - sx), colour, coverage);
        }
    }

    fn panel(&mut self, panel: &Panel, (left, top): (f32, f32), w: f32, h: f32) {
        let points = panel.series.iter().flat_map(|s| s.points.iter().copied());
        let (mut x_hi, mut y_lo, mut y_hi) = (f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
        for (x, y) in points.filter(|(x, y)| x.is_finite() && y.is_finite()) {
            (x_hi, y_lo, y_hi) = (x_hi.max(x), y_lo.min(y), y_hi.max(y));
        }
        if !y_lo.is_finite() {
            (x_hi, y_lo, y_hi) = (1.0, 0.0, 1.0);
        }
        // x from 0 (bits per texel); y (PSNR) with a little room above and below.
        let x_lo = 0.0;
        let x_hi = if x_hi > 0.0 { x_hi * 1.05 } else { 1.0 };
        let pad = ((y_hi - y_lo) * 0.08).max(0.5);
        (y_lo, y_hi) = ((y_lo - pad).floor(), (y_hi + pad).ceil());
        let (px0, px1) = (left + MARGIN_LEFT, left + w - MARGIN_RIGHT);
        let (py0, py1) = (top + MARGIN_TOP, top + h - MARGIN_BOTTOM);
        let to_px = |x: f64, y: f64| {
            (px0 + ((x - x_lo) / (x_hi - x_lo)) as f32 * (px1 - px0), py1 - ((y - y_lo) / (y_hi - y_lo)) as f32 * (py1 - py0))
        };
        let x_ticks = nice_ticks(x_lo, x_hi, 6);
        let y_ticks = nice_ticks(y_lo, y_hi, 6);
        let x_step = x_ticks.get(1).zip(x_ticks.first()).map_or(1.0, |(b, a)| b - a);
        let y_step = y_ticks.get(1).zip(y_ticks.first()).map_or(1.0, |(b, a)| b - a);
        for &x in &x_ticks {
            let (sx, _) = to_px(x, y_lo);
            self.line((sx, py0), (sx, py1), 1.0, GRID);
            let label = tick_label(x, x_step);
            let lw = self.text_width(&label);
            self.text(&label, sx - lw / 2.0, py1 + TEXT_PX + 4.0, INK);
        }
        for &y in &y_ticks {
            let (_, sy) = to_px(x_lo, y);
            self.line((px0, sy), (px1, sy), 1.0, GRID);
            let label = tick_label(y, y_step);
            let lw = self.text_width(&label);
            self.text(&label, px0 - lw - 6.0, sy + TEXT_PX * 0.35, INK);
        }
        self.line((px0, py1), (px1, py1), 1.5, INK);
        self.line((px0, py0), (px0, py1), 1.5, INK);
        let tw = self.text_width(&panel.title);
        self.text(&panel.title, (px0 + px1 - tw) / 2.0, top + MARGIN_TOP - 12.0, INK);
        let xw = self.text_width(&panel.x_label);
        self.text(&panel.x_label, (px0 + px1 - xw) / 2.0, top + h - 8.0, INK);
        self.text_vertical(&panel.y_label, left + 12.0, f32::midpoint(py0, py1), INK);
        for s in &panel.series {
            let pts: Vec<(f32, f32)> = s.points.iter().filter(|(x, y)| x.is_finite() && y.is_finite()).map(|&(x, y)| to_px(x, y)).collect();
            if s.joined {
                for pair in pts.windows(2) {
                    self.line(pair[0], pair[1], 2.0, s.colour);
                }
            }
            for &p in &pts {
                self.marker(s.marker, p, s.colour);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(nice_ticks(31.0, 47.0, 6), vec![35.0, 40.0, 45.0]);
        assert_eq!(nice_ticks(31.0, 47.0, 10), vec![32.0, 34.0, 36.0, 38.0, 40.0, 42.0, 44.0, 46.0]);
        let small = nice_ticks(0.0, 0.9, 5);
        assert_eq!(small.len(), 5);
        assert!(small.iter().zip([0.0, 0.2, 0.4, 0.6, 0.8]).all(|(a, b)| (a - b).abs() < 1e-12), "{small:?}");
        assert_eq!(tick_label(0.4, 0.2), "0.4");
        assert_eq!(tick_label(40.0, 2.0), "40");
    }

    #[test]
    fn a_chart_draws_its_series_in_their_colours_and_its_text() {
        let red = [220, 40, 40];
        let blue = [40, 40, 220];
        let panel = Panel {
            title: "PSNR".into(),
            x_label: "bits per texel".into(),
            y_label: "dB".into(),
            series: vec![
                Series { colour: red, marker: Marker::Circle, joined: true, points: vec![(1.0, 30.0), (4.0, 40.0)] },
                Series { colour: blue, marker: Marker::Triangle, joined: false, points: vec![(8.0, 35.0)] },
            ],
        };
        let legend = [LegendEntry { label: "texset".into(), colour: red, marker: Some(Marker::Circle), line: true }];
        let image = render_grid(&[panel.clone(), panel], 2, &legend, 400, 300).unwrap();
        assert_eq!((image.width(), image.height()), (800, 300 + LEGEND_ROW_PX + 12));
        let count = |c: [u8; 3]| image.pixels().filter(|p| p.0 == c).count();
        // Both colours fully covered somewhere (markers' cores), and dark text pixels drawn.
        assert!(count(red) > 40 && count(blue) > 20, "red {} blue {}", count(red), count(blue));
        assert!(image.pixels().filter(|p| p.0.iter().all(|&c| c < 80)).count() > 200);
        // The red line joins its two points: the midpoint of the first panel's segment is red.
        let to_px = |x: f64, y: f64, x_hi: f64, y_lo: f64, y_hi: f64| {
            let (px0, px1, py0, py1) = (MARGIN_LEFT, 400.0 - MARGIN_RIGHT, MARGIN_TOP, 300.0 - MARGIN_BOTTOM);
            (px0 + (x / x_hi) as f32 * (px1 - px0), py1 - ((y - y_lo) / (y_hi - y_lo)) as f32 * (py1 - py0))
        };
        // x from 0 to 8·1.05; y padded by max(0.8, 0.5) to 29..41.
        let (mx, my) = to_px(2.5, 35.0, 8.4, 29.0, 41.0);
        let p = image.get_pixel(mx as u32, my as u32).0;
        assert!(p[0] > 150 && p[2] < 120, "{p:?} at ({mx}, {my})");
    }

    #[test]
    fn a_grid_wraps_its_panels_into_rows() {
        let only = |colour: [u8; 3]| Panel {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series { colour, marker: Marker::Square, joined: false, points: vec![(1.0, 1.0)] }],
        };
        let (red, green, blue) = ([220, 40, 40], [40, 200, 40], [40, 40, 220]);
        let image = render_grid(&[only(red), only(green), only(blue)], 2, &[], 300, 200).unwrap();
        assert_eq!((image.width(), image.height()), (600, 400 + 12));
        // Each colour is drawn only in its own cell: red top left, green top right, blue below.
        let cells = |c: [u8; 3]| {
            let mut cells: Vec<(u32, u32)> =
                image.enumerate_pixels().filter(|(_, _, p)| p.0 == c).map(|(x, y, _)| (x / 300, y / 200)).collect();
            cells.dedup();
            cells.sort_unstable();
            cells.dedup();
            cells
        };
        assert_eq!(cells(red), [(0, 0)]);
        assert_eq!(cells(green), [(1, 0)]);
        assert_eq!(cells(blue), [(0, 1)]);
    }
}
