//! Line charts: a small model (panels of named series over labelled axes)
//! and its rendering to SVG with the `plotters` crate. The model says
//! what is drawn; plotters draws it (no SVG written by hand here).

use plotters::prelude::*;

/// One line: its name (the legend's) and its points, in the panel's units.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One plot: a title, two axes with their labels (units included) and
/// the lines drawn over them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
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
    // Room above the data for the legend: a line per series, so that it
    // never covers a point.
    let (y0, y1) = legend_room((y0, y1), panel.series.len());
    let axis = TimeAxis::new(x0, x1);
    let x_axis = axis.x_axis(panel.x_time);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(x_axis, y0..y1)
        .map_err(draw_err)?;
    let time_tick = move |x: &f64| axis.label(*x);
    let decimals = tick_decimals(x1 - x0);
    let number_tick = move |x: &f64| format!("{x:.decimals$}");
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str());
    if panel.x_time {
        mesh.x_label_formatter(&time_tick);
    } else {
        mesh.x_label_formatter(&number_tick);
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
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
    }
    Ok(())
}

/// Decimals for the ticks of a numeric axis spanning `span`: enough to
/// tell the ticks apart (1.10, 1.15 … on a span of 0.4: two), none on a
/// span of 10 or more.
pub(crate) fn tick_decimals(span: f64) -> usize {
    if !(span.is_finite() && span > 0.0) {
        return 1;
    }
    (1.0 - span.log10().floor()).clamp(0.0, 4.0) as usize
}

/// `(lo, hi)` raised at the top so that `lines` legend lines (about 7 %
/// of a panel's plot height each, with its border) sit above the data.
pub(crate) fn legend_room((lo, hi): (f64, f64), lines: usize) -> (f64, f64) {
    if lines == 0 {
        return (lo, hi);
    }
    // The data keeps the lower share of the height: 1 − 0.07 per line.
    let share = (1.0 - 0.07 * lines as f64 - 0.04).max(0.4);
    (lo, lo + (hi - lo) / share)
}

/// A time axis from `x0` to `x1` (Unix seconds): ticks at round times of
/// day (every 1, 2, 5, 10, 15 or 30 s or min, 1, 2, 3, 6 or 12 h, or days),
/// at most eight, written in UTC as `HH:MM`, with seconds when the step is
/// under a minute and with the date when the axis spans more than a day.
#[derive(Debug, Clone, Copy)]
pub struct TimeAxis {
    x0: f64,
    x1: f64,
    step: f64,
}

impl TimeAxis {
    const STEPS: [f64; 19] = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
        10800.0, 21600.0, 43200.0, 86400.0, 172800.0,
    ];

    pub fn new(x0: f64, x1: f64) -> Self {
        let span = (x1 - x0).max(0.0);
        let step = Self::STEPS
            .into_iter()
            .find(|s| span / s <= 8.0)
            .unwrap_or_else(|| (span / 8.0 / 86400.0).ceil() * 86400.0);
        Self { x0, x1, step }
    }

    /// The round times within the axis; one at its very right edge is
    /// left out when there are others (its label would be cut in half).
    pub fn ticks(&self) -> Vec<f64> {
        let first = (self.x0 / self.step).ceil() * self.step;
        let mut ticks: Vec<f64> = (0..)
            .map(|i| first + f64::from(i) * self.step)
            .take_while(|t| *t <= self.x1 + 1e-6)
            .take(64)
            .collect();
        let edge = self.x1 - 0.04 * (self.x1 - self.x0);
        if ticks.len() > 2 && ticks.last().is_some_and(|t| *t > edge) {
            ticks.pop();
        }
        ticks
    }

    /// The x axis over the same range: ticked at these round times for a
    /// time axis, where plotters puts them for any other.
    pub(crate) fn x_axis(&self, time: bool) -> Ticked {
        Ticked::new(
            self.x0..self.x1,
            if time { self.ticks() } else { Vec::new() },
        )
    }

    /// `secs` as a tick label.
    pub fn label(&self, secs: f64) -> String {
        utc_tick_as(secs, self.x1 - self.x0 > 86_400.0, self.step < 60.0)
    }
}

/// An x axis of numbers with its ticks where they are given (a time
/// axis's round times), else where plotters puts them. Written here
/// because plotters' own `WithKeyPoints` cannot take a label formatter.
pub(crate) struct Ticked {
    range: plotters::coord::types::RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    /// `range`, ticked at `ticks` (where plotters puts them if none).
    pub(crate) fn new(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Self {
        Self {
            range: range.into(),
            ticks,
        }
    }
}

impl plotters::coord::ranged1d::Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if self.ticks.is_empty() {
            self.range.key_points(hint)
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

/// `secs` (Unix seconds) as a tick of a time axis: `HH:MM` (UTC), or
/// `MM-DD HH:MM` when the axis spans more than a day.
pub fn utc_tick(secs: f64, with_date: bool) -> String {
    utc_tick_as(secs, with_date, false)
}

/// Names for the instants `secs` (Unix seconds), one each, as a time
/// axis's ticks: `MM-DD HH:MM` (UTC), with the seconds when two would
/// otherwise read alike (two runs in one minute).
pub fn utc_names(secs: &[f64]) -> Vec<String> {
    let names: Vec<String> = secs.iter().map(|&s| utc_tick_as(s, true, false)).collect();
    let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
    if distinct.len() == names.len() {
        names
    } else {
        secs.iter().map(|&s| utc_tick_as(s, true, true)).collect()
    }
}

fn utc_tick_as(secs: f64, with_date: bool, with_seconds: bool) -> String {
    let Ok(t) = jiff::Timestamp::from_second(secs.round() as i64) else {
        return String::new();
    };
    let format = match (with_date, with_seconds) {
        (true, true) => "%m-%d %H:%M:%S",
        (true, false) => "%m-%d %H:%M",
        (false, true) => "%H:%M:%S",
        (false, false) => "%H:%M",
    };
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
    #[test]
    fn a_numeric_axis_has_as_many_decimals_as_its_span_needs() {
        let d = super::tick_decimals;
        assert_eq!((d(0.4), d(4.0), d(40.0), d(1000.0)), (2, 1, 0, 0));
        assert_eq!((d(1e-9), d(0.0), d(f64::NAN)), (4, 1, 1));
        assert_eq!(format!("{:.*}", d(0.4), 1.15), "1.15");
    }

    #[test]
    fn runs_in_one_minute_are_named_apart_by_their_seconds() {
        // 2026-11-27T22:50:10Z and 22:50:40Z, then an hour later.
        let t = 1_795_819_810.0;
        assert_eq!(
            super::utc_names(&[t, t + 3600.0]),
            ["11-27 22:50", "11-27 23:50"]
        );
        assert_eq!(
            super::utc_names(&[t, t + 30.0]),
            ["11-27 22:50:10", "11-27 22:50:40"]
        );
    }

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
        // Round times only: every tick on a whole quarter hour here.
        for tick in left {
            assert!(["00", "15", "30", "45"].contains(&&tick[3..]), "{ticks:?}");
        }
    }

    #[test]
    fn time_ticks_fall_on_round_times() {
        // 06:16:07 to 06:31:07: every 2 min (at most eight), from 06:18.
        let t0 = 1_795_478_400.0 + 6.0 * 3600.0 + 16.0 * 60.0 + 7.0;
        let axis = TimeAxis::new(t0, t0 + 900.0);
        let labels: Vec<String> = axis.ticks().iter().map(|t| axis.label(*t)).collect();
        assert_eq!(
            labels.first().map(String::as_str),
            Some("06:18"),
            "{labels:?}"
        );
        assert_eq!(
            labels.last().map(String::as_str),
            Some("06:30"),
            "{labels:?}"
        );
        assert_eq!(labels.len(), 7);
        // Under a minute apart: seconds shown.
        let axis = TimeAxis::new(t0, t0 + 40.0);
        assert_eq!(axis.label(axis.ticks()[0]), "06:16:10");
        // Three days: whole days at 00:00 with their dates.
        let axis = TimeAxis::new(t0, t0 + 3.0 * 86400.0);
        let labels: Vec<String> = axis.ticks().iter().map(|t| axis.label(*t)).collect();
        assert!(
            labels
                .iter()
                .all(|l| l.ends_with(" 00:00") || l.ends_with(":00")),
            "{labels:?}"
        );
        assert!(labels.len() <= 8, "{labels:?}");
    }

    #[test]
    fn the_legend_has_room_above_the_data() {
        assert_eq!(legend_room((0.0, 10.0), 0), (0.0, 10.0));
        let (_, top) = legend_room((0.0, 10.0), 3);
        // Three lines: the data keeps 1 − 0.25 of the height.
        assert!((top - 10.0 / 0.75).abs() < 1e-9, "{top}");
    }
}
