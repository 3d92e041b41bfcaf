//! SmokePing's latency "smoke": for each ping series over time, the
//! spread of its round trips as shades (the middle 80 % light, the middle
//! 50 % darker) and the median as a bar coloured by the series' loss.

use crate::chart::{draw_err, ChartError};
use plotters::prelude::*;

/// One ping series at one time.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SmokePoint {
    /// Its place on the x axis: Unix seconds in a report.
    pub at: f64,
    pub p10: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub p90: f64,
    pub loss_pct: f64,
}

impl SmokePoint {
    /// The point of `rtts_ms` (the series' round trips), which lost
    /// `loss_pct` of its probes.
    pub fn of(at: f64, rtts_ms: &[f64], loss_pct: f64) -> Option<SmokePoint> {
        let mut v: Vec<f64> = rtts_ms.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let p = |q| sonde_model::nearest_rank(&v, q);
        Some(SmokePoint {
            at,
            p10: p(10.0),
            p25: p(25.0),
            median: p(50.0),
            p75: p(75.0),
            p90: p(90.0),
            loss_pct,
        })
    }
}

/// A smoke chart.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Smoke {
    pub title: String,
    pub x_label: String,
    /// x is a time, Unix seconds, written as UTC times on the axis.
    pub x_time: bool,
    pub points: Vec<SmokePoint>,
}

/// SmokePing's loss colours: none, up to 5 %, up to 20 %, more.
pub fn loss_colour(loss_pct: f64) -> RGBColor {
    if loss_pct <= 0.0 {
        RGBColor(0, 160, 0)
    } else if loss_pct <= 5.0 {
        RGBColor(0, 80, 255)
    } else if loss_pct <= 20.0 {
        RGBColor(255, 140, 0)
    } else {
        RGBColor(220, 0, 0)
    }
}

/// The smoke as an SVG document of `width` × `height` pixels.
pub fn render_smoke_svg(smoke: &Smoke, width: u32, height: u32) -> Result<String, ChartError> {
    if smoke.points.is_empty() {
        return Err(ChartError::Empty);
    }
    let xs = smoke.points.iter().map(|p| p.at);
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    // Half the typical gap between points: each point's bar width.
    let gaps: Vec<f64> = smoke
        .points
        .windows(2)
        .map(|w| (w[1].at - w[0].at).abs())
        .filter(|g| *g > 0.0)
        .collect();
    let half = gaps.iter().copied().fold(f64::INFINITY, f64::min);
    let half = if half.is_finite() { half * 0.4 } else { 0.4 };
    // Around the data, as SmokePing draws: the spread must show.
    let top = smoke
        .points
        .iter()
        .map(|p| p.p90)
        .fold(f64::NEG_INFINITY, f64::max);
    let bottom = smoke
        .points
        .iter()
        .map(|p| p.p10)
        .fold(f64::INFINITY, f64::min);
    let pad = ((top - bottom) * 0.2).max(0.5);
    // With room above for the legend's four lines.
    let (y0, y1) = crate::chart::legend_room(((bottom - pad).max(0.0), top + pad), 4);
    let axis = crate::chart::TimeAxis::new(x0 - half, x1 + half);
    let x_axis = axis.x_axis(smoke.x_time);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&smoke.title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x_axis, y0..y1)
            .map_err(draw_err)?;
        let time_tick = move |x: &f64| axis.label(*x);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(smoke.x_label.as_str()).y_desc("RTT (ms)");
        if smoke.x_time {
            mesh.x_label_formatter(&time_tick);
        }
        mesh.draw().map_err(draw_err)?;
        let band = |lo: fn(&SmokePoint) -> f64, hi: fn(&SmokePoint) -> f64, shade: RGBColor| {
            // A band of no height is not drawn (resvg rejects it).
            smoke
                .points
                .iter()
                .filter(move |p| hi(p) > lo(p))
                .map(move |p| {
                    Rectangle::new([(p.at - half, lo(p)), (p.at + half, hi(p))], shade.filled())
                })
        };
        chart
            .draw_series(band(|p| p.p10, |p| p.p90, RGBColor(215, 215, 215)))
            .map_err(draw_err)?;
        chart
            .draw_series(band(|p| p.p25, |p| p.p75, RGBColor(150, 150, 150)))
            .map_err(draw_err)?;
        chart
            .draw_series(smoke.points.iter().map(|p| {
                PathElement::new(
                    vec![(p.at - half, p.median), (p.at + half, p.median)],
                    loss_colour(p.loss_pct).stroke_width(3),
                )
            }))
            .map_err(draw_err)?;
        for (name, loss) in [
            ("no loss", 0.0),
            ("loss ≤ 5 %", 5.0),
            ("loss ≤ 20 %", 20.0),
            ("loss > 20 %", 50.0),
        ] {
            let c = loss_colour(loss);
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .map_err(draw_err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_gives_its_percentiles_and_loss() {
        let rtts: Vec<f64> = (1..=10).map(f64::from).collect();
        let p = SmokePoint::of(1.0, &rtts, 50.0).unwrap();
        assert_eq!(
            (p.p10, p.p25, p.median, p.p75, p.p90),
            (1.0, 3.0, 5.0, 8.0, 9.0)
        );
        assert_eq!(p.loss_pct, 50.0);
        assert!(SmokePoint::of(1.0, &[], 0.0).is_none());
        assert_eq!(loss_colour(0.0), RGBColor(0, 160, 0));
        assert_eq!(loss_colour(30.0), RGBColor(220, 0, 0));
    }

    #[test]
    fn each_point_has_two_shades_and_a_median_coloured_by_loss() {
        let points: Vec<SmokePoint> = (0..6)
            .map(|h| {
                let rtts: Vec<f64> = (0..20).map(|i| 94.0 + f64::from(i % 5)).collect();
                SmokePoint::of(f64::from(h), &rtts, if h == 3 { 20.0 } else { 0.0 }).unwrap()
            })
            .collect();
        let smoke = Smoke {
            title: "ping A to B".into(),
            x_label: "hours".into(),
            x_time: false,
            points,
        };
        let svg = render_smoke_svg(&smoke, 640, 360).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let shades = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .filter(|n| matches!(n.attribute("fill"), Some("#D7D7D7") | Some("#969696")))
            .count();
        assert_eq!(shades, 12);
        // Hour 3 lost 20 %: its median is orange.
        let orange = doc
            .descendants()
            .filter(|n| n.attribute("stroke") == Some("#FF8C00"))
            .count();
        assert!(orange >= 1);
    }
}
