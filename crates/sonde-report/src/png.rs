//! Charts as PNG: the SVG plotters draws, rasterised by resvg with the
//! system's fonts (DejaVu, from Debian's fonts-dejavu-core, installed by
//! scripts/system-deps.sh), so the PNG and the SVG are one drawing.

use crate::chart::ChartError;
use resvg::{tiny_skia, usvg};
use std::sync::{Arc, OnceLock};

/// The system's fonts, loaded once; "sans-serif" is DejaVu Sans when it
/// is there.
fn fonts() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_system_fonts();
        if db
            .faces()
            .any(|f| f.families.iter().any(|(n, _)| n == "DejaVu Sans"))
        {
            db.set_sans_serif_family("DejaVu Sans");
        }
        Arc::new(db)
    })
    .clone()
}

/// `svg` as a PNG of the SVG's own size.
pub fn svg_to_png(svg: &str) -> Result<Vec<u8>, ChartError> {
    let options = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options)
        .map_err(|e| ChartError::Draw(format!("reading the SVG: {e}")))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| ChartError::Draw("an empty picture".into()))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
        .encode_png()
        .map_err(|e| ChartError::Draw(format!("encoding the PNG: {e}")))
}
