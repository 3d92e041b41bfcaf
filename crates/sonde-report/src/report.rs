//! A report: tables and figures made from the archive, and what they were
//! made from. One model, rendered to a self-contained HTML page (figures
//! inline as SVG, no script, no outside file), to Markdown (figures as
//! files beside it), and to JSON (the model itself); the PDF is the HTML
//! printed by a real browser.

use crate::chart::{render_svg, Chart, ChartError};
use crate::heatmap::{render_heatmap_svg, HeatMap};
use crate::smoke::{render_smoke_svg, Smoke};
use crate::table::{html_escape as esc, Table};
use serde::Serialize;
use std::fmt::Write;

/// What a figure draws.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FigureBody {
    Chart(Chart),
    HeatMap(HeatMap),
    Smoke(Smoke),
}

/// A figure: a name for its files, a caption, and what it draws.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// Letters, digits and `-`: the stem of its SVG and PNG files.
    pub id: String,
    pub caption: String,
    #[serde(flatten)]
    pub body: FigureBody,
}

impl Figure {
    /// The figure as an SVG document.
    pub fn svg(&self) -> Result<String, ChartError> {
        match &self.body {
            FigureBody::Chart(c) => render_svg(c),
            FigureBody::HeatMap(h) => render_heatmap_svg(h, 900, 520),
            FigureBody::Smoke(s) => render_smoke_svg(s, 900, 420),
        }
    }
}

/// What a report was made from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    pub sonde_version: String,
    /// When the report was made (RFC 3339).
    pub made: String,
    /// The archive, as messages name it.
    pub archive: String,
    /// The selections, as given.
    pub queries: Vec<String>,
    /// Every result the report read.
    pub result_ids: Vec<String>,
}

/// A whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub title: String,
    pub provenance: Provenance,
    pub tables: Vec<Table>,
    pub figures: Vec<Figure>,
}

/// The page's style: print-friendly, no web font.
const STYLE: &str = "body{font-family:'DejaVu Sans',sans-serif;margin:2em auto;max-width:60em;\
color:#222}h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em}table{border-collapse:collapse;\
margin:1em 0}caption{text-align:left;font-weight:bold;padding:.3em 0}th,td{border:1px solid #bbb;\
padding:.25em .6em}td.num{text-align:right;font-variant-numeric:tabular-nums}p.note{font-size:.85em;\
color:#555}figure{margin:1.5em 0;page-break-inside:avoid}figure svg{max-width:100%;height:auto}\
figcaption{font-size:.9em;color:#444}dl{font-size:.85em}dt{font-weight:bold}dd{margin:0 0 .4em 1em;\
word-break:break-all}@media print{body{margin:0}}";

impl Report {
    /// A self-contained HTML page.
    pub fn to_html(&self) -> Result<String, ChartError> {
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
            esc(&self.title),
            esc(&self.title)
        );
        if !self.tables.is_empty() {
            out += "<h2>Tables</h2>\n";
            for t in &self.tables {
                out += &t.to_html();
            }
        }
        if !self.figures.is_empty() {
            out += "<h2>Figures</h2>\n";
            for f in &self.figures {
                let svg = f.svg()?;
                // The SVG inline, without its XML declaration.
                let svg = svg.trim_start_matches(|c| c != '<');
                let svg = match svg.strip_prefix("<?xml") {
                    Some(rest) => rest.split_once("?>").map_or(svg, |(_, s)| s.trim_start()),
                    None => svg,
                };
                let _ = write!(
                    out,
                    "<figure id=\"{}\">\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
                    esc(&f.id),
                    esc(&f.caption)
                );
            }
        }
        let p = &self.provenance;
        let _ = write!(
            out,
            "<h2>What this report was made from</h2>\n<dl>\n<dt>sonde</dt><dd>{}</dd>\n\
             <dt>made</dt><dd>{}</dd>\n<dt>archive</dt><dd>{}</dd>\n<dt>selections</dt><dd>{}</dd>\n\
             <dt>results ({})</dt><dd>{}</dd>\n</dl>\n</body>\n</html>\n",
            esc(&p.sonde_version),
            esc(&p.made),
            esc(&p.archive),
            esc(&p.queries.join("; ")),
            p.result_ids.len(),
            esc(&p.result_ids.join(" "))
        );
        Ok(out)
    }

    /// Markdown, each figure linked as `FIGURE_DIR/ID.svg`.
    pub fn to_markdown(&self, figure_dir: &str) -> String {
        let mut out = format!("# {}\n\n", self.title);
        for t in &self.tables {
            out += &t.to_markdown();
            out.push('\n');
        }
        for f in &self.figures {
            let _ = writeln!(
                out,
                "![{}]({figure_dir}/{}.svg)\n\n*{}*\n",
                f.caption, f.id, f.caption
            );
        }
        let p = &self.provenance;
        let _ = write!(
            out,
            "## What this report was made from\n\n- sonde {}\n- made {}\n- archive {}\n\
             - selections: {}\n- {} results: {}\n",
            p.sonde_version,
            p.made,
            p.archive,
            p.queries.join("; "),
            p.result_ids.len(),
            p.result_ids.join(" ")
        );
        out
    }
}
