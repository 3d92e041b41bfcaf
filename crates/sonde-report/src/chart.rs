//! Line charts: a small model (panels of named series over labelled axes)
//! and its rendering to SVG with the `plotters` crate. The model says
//! what is drawn; plotters draws it (no SVG written by hand here).

use plotters::prelude::*;

/// One line: its name (the legend's) and its points, in the panel's units.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One plot: a title, two axes with their labels (units included) and
/// the lines drawn over them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Panel {
    pub title: String,
    /// e.g. "offered (Mbit/s)".
    pub x_label: String,
    /// e.g. "goodput (Mbit/s)".
    pub y_label: String,
    /// The y range; `None`: from 0 to the highest point (plus 5 %).
    pub y_range: Option<(f64, f64)>,
    /// x is a time, Unix seconds: its ticks are written as UTC times of
    /// day, with the date when the panel spans more than a day.
    pub x_time: bool,
    pub series: Vec<Series>,
}

/// Panels laid out in a grid of `columns` columns, row by row.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Chart {
    pub panels: Vec<Panel>,
    pub columns: usize,
    /// Pixels of one panel.
    pub panel_width: u32,
    pub panel_height: u32,
}

impl Chart {
    /// `panels` two to a row, each 520 × 340 pixels: the layout of every
    /// method's chart.
    pub fn grid(panels: Vec<Panel>) -> Self {
        Self {
            panels,
            columns: 2,
            panel_width: 520,
            panel_height: 340,
        }
    }
}

/// What can go wrong drawing a chart.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("nothing to draw: the chart has no panels")]
    Empty,
    #[error("drawing the chart: {0}")]
    Draw(String),
}

pub(crate) fn draw_err(e: impl std::fmt::Display) -> ChartError {
    ChartError::Draw(e.to_string())
}

/// A range covering `values` (a unit one around a single value).
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-9 {
        return (lo - 0.5, hi + 0.5);
    }
    (lo, hi)
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    shared_x: Option<(f64, f64)>,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let all = || panel.series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = shared_x.unwrap_or_else(|| span(all().map(|p| p.0)));
    let (y0, y1) = panel.y_range.unwrap_or_else(|| {
        let (_, hi) = span(all().map(|p| p.1));
        (0.0, hi.max(1e-9) * 1.05)
    });
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(draw_err)?;
    let days = x1 - x0 > 86_400.0;
    let time_tick = move |x: &f64| utc_tick(*x, days);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str());
    if panel.x_time {
        mesh.x_label_formatter(&time_tick);
    }
    mesh.draw().map_err(draw_err)?;
    for (i, s) in panel.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        // A line needs two points; one is drawn as a dot.
        let drawn = if s.points.len() < 2 {
            chart.draw_series(
                s.points
                    .iter()
                    .map(|p| Circle::new(*p, 4, colour.filled()))
                    .collect::<Vec<_>>(),
            )
        } else {
            chart.draw_series(LineSeries::new(
                s.points.iter().copied(),
                colour.stroke_width(2),
            ))
        };
        drawn
            .map_err(draw_err)?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
    }
    if !panel.series.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
    }
    Ok(())
}

/// `secs` (Unix seconds) as a tick of a time axis: `HH:MM` (UTC), or
/// `MM-DD HH:MM` when the axis spans more than a day.
pub fn utc_tick(secs: f64, with_date: bool) -> String {
    let Ok(t) = jiff::Timestamp::from_second(secs.round() as i64) else {
        return String::new();
    };
    let format = if with_date { "%m-%d %H:%M" } else { "%H:%M" };
    t.strftime(format).to_string()
}

/// The chart as an SVG document.
pub fn render_svg(chart: &Chart) -> Result<String, ChartError> {
    if chart.panels.is_empty() {
        return Err(ChartError::Empty);
    }
    let columns = chart.columns.clamp(1, chart.panels.len());
    let rows = chart.panels.len().div_ceil(columns);
    let size = (
        chart.panel_width * columns as u32,
        chart.panel_height * rows as u32,
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        // The time panels of a chart share one time axis: one origin, so
        // that a glance across them compares the same moments.
        let shared_x = chart.panels.iter().any(|p| p.x_time).then(|| {
            span(
                chart
                    .panels
                    .iter()
                    .filter(|p| p.x_time)
                    .flat_map(|p| p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0))),
            )
        });
        let areas = root.split_evenly((rows, columns));
        for (area, panel) in areas.iter().zip(&chart.panels) {
            draw_panel(area, panel, shared_x.filter(|_| panel.x_time))?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> Chart {
        let line = |name: &str, k: f64| Series {
            name: name.into(),
            points: (1..=5).map(|i| (f64::from(i), k * f64::from(i))).collect(),
        };
        Chart {
            panels: vec![
                Panel {
                    title: "forward: goodput".into(),
                    x_label: "offered (Mbit/s)".into(),
                    y_label: "goodput (Mbit/s)".into(),
                    y_range: None,
                    x_time: false,
                    series: vec![line("goodput", 1.0), line("offered", 1.1)],
                },
                Panel {
                    title: "forward: PDR".into(),
                    x_label: "offered (Mbit/s)".into(),
                    y_label: "PDR (%)".into(),
                    y_range: Some((0.0, 105.0)),
                    x_time: false,
                    series: vec![line("PDR", 20.0)],
                },
            ],
            columns: 2,
            panel_width: 480,
            panel_height: 320,
        }
    }

    #[test]
    fn the_svg_parses_and_holds_each_series_and_axis_label() {
        let svg = render_svg(&chart()).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        assert_eq!(doc.root_element().attribute("width"), Some("960"));
        // Three data lines, drawn as polylines (the legend's samples are
        // two-point polylines too: count the five-point ones).
        let lines = doc
            .descendants()
            .filter(|n| n.tag_name().name() == "polyline")
            .filter(|n| {
                n.attribute("points")
                    .is_some_and(|p| p.split_whitespace().count() == 5)
            })
            .count();
        assert_eq!(lines, 3, "{svg}");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.tag_name().name() == "text")
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for label in [
            "offered (Mbit/s)",
            "goodput (Mbit/s)",
            "PDR (%)",
            "forward: PDR",
            "goodput",
            "offered",
            "PDR",
        ] {
            assert!(texts.contains(&label), "no text {label:?} in {texts:?}");
        }
    }

    #[test]
    fn an_empty_chart_is_an_error() {
        let mut c = chart();
        c.panels.clear();
        assert!(matches!(render_svg(&c), Err(ChartError::Empty)));
        // A series of one point still draws.
        let mut c = chart();
        c.panels[0].series[0].points.truncate(1);
        c.panels[0].series[1].points.truncate(1);
        assert!(render_svg(&c).is_ok());
    }

    #[test]
    fn a_time_axis_is_written_in_utc_with_dates_past_a_day() {
        // 2026-11-24T05:01:00Z.
        let t = 1_795_478_400.0 + 5.0 * 3600.0 + 60.0;
        assert_eq!(utc_tick(t, false), "05:01");
        assert_eq!(utc_tick(t, true), "11-24 05:01");
        // Two time panels of one chart share the axis: the one whose
        // points end early still spans to the other's last.
        let panel = |from: f64, to: f64| Panel {
            title: "p".into(),
            x_label: "time (UTC)".into(),
            y_label: "goodput (Mbit/s)".into(),
            y_range: None,
            x_time: true,
            series: vec![Series {
                name: "goodput".into(),
                points: vec![(from, 1.0), (to, 2.0)],
            }],
        };
        let svg = render_svg(&Chart::grid(vec![
            panel(t, t + 3600.0),
            panel(t, t + 7200.0),
        ]))
        .unwrap();
        // Tick labels are text lines of their own, `HH:MM`.
        let ticks: Vec<&str> = svg
            .lines()
            .filter(|l| l.len() == 5 && l.as_bytes()[2] == b':')
            .collect();
        let (left, right) = ticks.split_at(ticks.len() / 2);
        assert_eq!(left, right, "one time axis for both panels");
        assert!(left.iter().any(|t| *t > "06:30"), "{ticks:?}");
        assert!(!svg.contains("0.002"), "no fractional hours");
    }
}
