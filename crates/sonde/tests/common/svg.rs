//! Reading what an SVG chart drew: its lines, by their points.

/// The number of points of each polyline of `svg` (a chart's data lines,
/// and its axes' and grid's two-point lines).
pub fn polyline_points(svg: &str) -> Vec<usize> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .filter_map(|n| n.attribute("points"))
        .map(|p| p.split_whitespace().count())
        .collect()
}
