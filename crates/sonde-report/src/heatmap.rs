//! Day heat maps (seed 000 Figs 30, 41, 42): hour of day × day (or run),
//! each cell coloured by a metric, with a labelled colour scale. One
//! model, rendered to SVG by plotters.

use crate::chart::{draw_err, ChartError, Ticked};
use plotters::prelude::*;

/// A heat map: `cells[y][x]`, `None` where nothing was measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct HeatMap {
    pub title: String,
    /// e.g. "day".
    pub x_label: String,
    /// e.g. "hour of day (UTC)".
    pub y_label: String,
    pub x_names: Vec<String>,
    pub y_names: Vec<String>,
    pub cells: Vec<Vec<Option<f64>>>,
    /// What the colour means, with its unit: "TCP goodput (Mbit/s)".
    pub scale_label: String,
}

impl HeatMap {
    /// The lowest and highest value measured.
    pub fn range(&self) -> Option<(f64, f64)> {
        let vals = self.cells.iter().flatten().flatten().copied();
        let (lo, hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        lo.is_finite().then_some((lo, hi))
    }
}

/// The colour of `t` in 0…1: dark blue, through teal and green, to yellow
/// (a perceptually ordered ramp, as viridis).
pub fn ramp(t: f64) -> RGBColor {
    const STOPS: [(f64, (u8, u8, u8)); 5] = [
        (0.0, (68, 1, 84)),
        (0.25, (59, 82, 139)),
        (0.5, (33, 145, 140)),
        (0.75, (94, 201, 98)),
        (1.0, (253, 231, 37)),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let i = STOPS.iter().rposition(|s| s.0 <= t).unwrap_or(0).min(3);
    let (t0, c0) = STOPS[i];
    let (t1, c1) = STOPS[i + 1];
    let f = (t - t0) / (t1 - t0);
    let mix = |a: u8, b: u8| (f64::from(a) + f * (f64::from(b) - f64::from(a))).round() as u8;
    RGBColor(mix(c0.0, c1.0), mix(c0.1, c1.1), mix(c0.2, c1.2))
}

/// Every `step`-th name, so that labels do not overlap.
fn thin(n: usize, room: usize) -> usize {
    n.div_ceil(room.max(1)).max(1)
}

/// The heat map as an SVG document of `width` × `height` pixels.
pub fn render_heatmap_svg(map: &HeatMap, width: u32, height: u32) -> Result<String, ChartError> {
    let (nx, ny) = (map.x_names.len(), map.y_names.len());
    if nx == 0 || ny == 0 {
        return Err(ChartError::Empty);
    }
    let (lo, hi) = map.range().unwrap_or((0.0, 1.0));
    let spread = if hi - lo > 1e-12 { hi - lo } else { 1.0 };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (main, bar) = root.split_horizontally(width.saturating_sub(110));
        let x_step = thin(nx, 12);
        let y_step = thin(ny, 12);
        // Cell i spans [i, i + 1]; its name is ticked at its centre. (A
        // segmented axis of one segment has no width: a map of one row
        // or column drew nothing.)
        let centres = |n: usize, step: usize| -> Vec<f64> {
            (0..n)
                .filter(|i| i.is_multiple_of(step))
                .map(|i| i as f64 + 0.5)
                .collect()
        };
        let mut chart = ChartBuilder::on(&main)
            .caption(&map.title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(
                Ticked::new(0.0..nx as f64, centres(nx, x_step)),
                Ticked::new(0.0..ny as f64, centres(ny, y_step)),
            )
            .map_err(draw_err)?;
        let name = |names: &[String], v: &f64| {
            names
                .get(v.floor().max(0.0) as usize)
                .cloned()
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(map.x_label.as_str())
            .y_desc(map.y_label.as_str())
            .x_label_formatter(&|v| name(&map.x_names, v))
            .y_label_formatter(&|v| name(&map.y_names, v))
            .draw()
            .map_err(draw_err)?;
        let cells = map.cells.iter().enumerate().flat_map(|(y, row)| {
            row.iter().enumerate().filter_map(move |(x, v)| {
                let v = (*v)?;
                let c = ramp((v - lo) / spread);
                let (x, y) = (x as f64, y as f64);
                Some(Rectangle::new([(x, y), (x + 1.0, y + 1.0)], c.filled()))
            })
        });
        chart.draw_series(cells).map_err(draw_err)?;
        // The scale: a column of colours from low to high, labelled.
        let mut scale = ChartBuilder::on(&bar)
            .margin_top(36)
            .margin_bottom(48)
            .margin_right(8)
            .y_label_area_size(56)
            .caption(&map.scale_label, ("sans-serif", 11))
            .build_cartesian_2d(0.0..1.0, lo..lo + spread)
            .map_err(draw_err)?;
        scale
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_labels(6)
            .y_label_style(("sans-serif", 11))
            .draw()
            .map_err(draw_err)?;
        let steps = 50;
        scale
            .draw_series((0..steps).map(|i| {
                let a = lo + spread * i as f64 / steps as f64;
                let b = lo + spread * (i + 1) as f64 / steps as f64;
                Rectangle::new(
                    [(0.0, a), (1.0, b)],
                    ramp(i as f64 / (steps - 1) as f64).filled(),
                )
            }))
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ramp_runs_from_dark_to_light_and_clamps() {
        assert_eq!(ramp(0.0), RGBColor(68, 1, 84));
        assert_eq!(ramp(1.0), RGBColor(253, 231, 37));
        assert_eq!(ramp(2.0), ramp(1.0));
        assert_eq!(ramp(f64::NAN), ramp(0.0));
        assert_eq!(ramp(0.5), RGBColor(33, 145, 140));
    }

    #[test]
    fn each_measured_cell_is_one_rectangle_of_its_colour() {
        let map = HeatMap {
            title: "TCP A to B".into(),
            x_label: "day".into(),
            y_label: "hour of day (UTC)".into(),
            x_names: vec!["11-24".into(), "11-25".into(), "11-26".into()],
            y_names: (0..24).map(|h| format!("{h:02}")).collect(),
            cells: (0..24)
                .map(|h| {
                    (0..3)
                        .map(|d| (h != 5 || d != 1).then_some(f64::from(h * 3 + d)))
                        .collect()
                })
                .collect(),
            scale_label: "goodput (Mbit/s)".into(),
        };
        assert_eq!(map.range(), Some((0.0, 71.0)));
        let svg = render_heatmap_svg(&map, 800, 500).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let fills: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter_map(|n| n.attribute("fill"))
            .collect();
        // 71 cells (one missing), 50 scale steps, the background.
        let lowest = "#440154";
        let highest = "#FDE725";
        assert!(
            fills
                .iter()
                .filter(|f| f.eq_ignore_ascii_case(lowest))
                .count()
                >= 2
        );
        assert!(
            fills
                .iter()
                .filter(|f| f.eq_ignore_ascii_case(highest))
                .count()
                >= 2
        );
        let rects = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
        assert_eq!(rects, 71 + 50 + 1, "{rects}");
        assert!(svg.contains("hour of day (UTC)") && svg.contains("11-25"));
        // The PNG is the same drawing, at the SVG's size.
        let png = crate::png::svg_to_png(&svg).unwrap();
        let back = resvg::tiny_skia::Pixmap::decode_png(&png).expect("a PNG");
        assert_eq!((back.width(), back.height()), (800, 500));
    }

    #[test]
    fn a_map_of_one_row_draws_its_cells_with_their_names() {
        // A one-hour battery by group: one row, two columns.
        let map = HeatMap {
            title: "tcp by hour and group".into(),
            x_label: "group".into(),
            y_label: "hour of day (UTC)".into(),
            x_names: vec!["geant".into(), "stesta".into()],
            y_names: vec!["22".into()],
            cells: vec![vec![Some(92.0), Some(8.0)]],
            scale_label: "goodput (Mbit/s)".into(),
        };
        let svg = render_heatmap_svg(&map, 800, 500).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let cells: Vec<f64> = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter_map(|n| n.attribute("height")?.parse().ok())
            .collect();
        // 2 cells, 50 scale steps, the background: each of some height.
        assert_eq!(cells.len(), 2 + 50 + 1, "{svg}");
        assert!(cells.iter().all(|h| *h > 0.0), "{cells:?}");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for name in ["geant", "stesta", "22"] {
            assert!(texts.contains(&name), "no {name} in {texts:?}");
        }
    }
}
