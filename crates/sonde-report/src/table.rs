//! Tables: one model (a title, columns with units, rows of cells) and its
//! renderings to text, Markdown, CSV and HTML. Reports, `sonde compare`
//! and the portal draw the same model.

use std::fmt::Write;

/// A column: its name and its unit (empty: none), shown as `name (unit)`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Column {
    pub name: String,
    pub unit: String,
}

impl Column {
    pub fn new(name: &str, unit: &str) -> Self {
        Self {
            name: name.into(),
            unit: unit.into(),
        }
    }

    fn heading(&self) -> String {
        if self.unit.is_empty() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, self.unit)
        }
    }
}

/// A cell: text, or a number shown with `decimals` places (kept whole for
/// CSV and JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Cell {
    Text(String),
    Number { value: f64, decimals: usize },
    Empty,
}

impl Cell {
    pub fn num(value: f64, decimals: usize) -> Self {
        if value.is_finite() {
            Cell::Number { value, decimals }
        } else {
            Cell::Empty
        }
    }

    pub fn text(s: impl Into<String>) -> Self {
        Cell::Text(s.into())
    }

    /// As shown to people.
    pub fn shown(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Number { value, decimals } => format!("{value:.decimals$}"),
            Cell::Empty => "–".into(),
        }
    }

    /// As written for machines (CSV): numbers in full.
    fn raw(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Number { value, .. } => value.to_string(),
            Cell::Empty => String::new(),
        }
    }

    fn is_number(&self) -> bool {
        matches!(self, Cell::Number { .. })
    }
}

/// A table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    /// A line under the table: how to read it, where it came from.
    pub note: Option<String>,
}

/// `s` safe inside HTML text and attribute values.
pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Table {
    /// Aligned plain text: numbers to the right, text to the left.
    pub fn to_text(&self) -> String {
        let heads: Vec<String> = self.columns.iter().map(Column::heading).collect();
        let mut widths: Vec<usize> = heads.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, c) in row.iter().enumerate().take(widths.len()) {
                widths[i] = widths[i].max(c.shown().chars().count());
            }
        }
        let mut out = format!("{}\n", self.title);
        let pad = |s: &str, w: usize, right: bool| {
            let n = w.saturating_sub(s.chars().count());
            if right {
                format!("{}{s}", " ".repeat(n))
            } else {
                format!("{s}{}", " ".repeat(n))
            }
        };
        let line: Vec<String> = heads
            .iter()
            .enumerate()
            .map(|(i, h)| pad(h, widths[i], i > 0))
            .collect();
        out += line.join("  ").trim_end();
        out.push('\n');
        for row in &self.rows {
            let line: Vec<String> = row
                .iter()
                .enumerate()
                .take(widths.len())
                .map(|(i, c)| pad(&c.shown(), widths[i], c.is_number() || i > 0))
                .collect();
            out += line.join("  ").trim_end();
            out.push('\n');
        }
        if let Some(n) = &self.note {
            let _ = writeln!(out, "{n}");
        }
        out
    }

    /// A GitHub-flavoured Markdown table under a `###` title.
    pub fn to_markdown(&self) -> String {
        let esc = |s: String| s.replace('|', "\\|");
        let mut out = format!("### {}\n\n", self.title);
        let heads: Vec<String> = self.columns.iter().map(|c| esc(c.heading())).collect();
        let _ = writeln!(out, "| {} |", heads.join(" | "));
        let rule: Vec<&str> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { "---" } else { "---:" })
            .collect();
        let _ = writeln!(out, "|{}|", rule.join("|"));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| esc(c.shown())).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        if let Some(n) = &self.note {
            let _ = write!(out, "\n{n}\n");
        }
        out
    }

    /// CSV: a header of `name (unit)` and the numbers in full.
    pub fn to_csv(&self) -> String {
        let field = |s: String| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s
            }
        };
        let mut out = String::new();
        let heads: Vec<String> = self.columns.iter().map(|c| field(c.heading())).collect();
        let _ = writeln!(out, "{}", heads.join(","));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| field(c.raw())).collect();
            let _ = writeln!(out, "{}", cells.join(","));
        }
        out
    }

    /// An HTML `<table>` with its caption.
    pub fn to_html(&self) -> String {
        let mut out = format!(
            "<table>\n<caption>{}</caption>\n<thead><tr>",
            html_escape(&self.title)
        );
        for c in &self.columns {
            let _ = write!(out, "<th>{}</th>", html_escape(&c.heading()));
        }
        out += "</tr></thead>\n<tbody>\n";
        for row in &self.rows {
            out += "<tr>";
            for c in row {
                let class = if c.is_number() { " class=\"num\"" } else { "" };
                let _ = write!(out, "<td{class}>{}</td>", html_escape(&c.shown()));
            }
            out += "</tr>\n";
        }
        out += "</tbody>\n</table>\n";
        if let Some(n) = &self.note {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", html_escape(n));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            title: "TCP means".into(),
            columns: vec![Column::new("path", ""), Column::new("goodput", "Mbit/s")],
            rows: vec![
                vec![Cell::text("GEANT"), Cell::num(85.254, 2)],
                vec![Cell::text("sTESTA, ipsec"), Cell::num(7.1, 2)],
                vec![Cell::text("<none>"), Cell::Empty],
            ],
            note: Some("means of 3 runs".into()),
        }
    }

    #[test]
    fn one_table_renders_four_ways() {
        let t = table();
        let text = t.to_text();
        assert!(text.contains("path           goodput (Mbit/s)"), "{text}");
        assert!(text.contains("GEANT                     85.25"), "{text}");
        let md = t.to_markdown();
        assert!(
            md.contains("| path | goodput (Mbit/s) |\n|---|---:|"),
            "{md}"
        );
        assert!(md.contains("| sTESTA, ipsec | 7.10 |"), "{md}");
        let csv = t.to_csv();
        assert_eq!(
            csv,
            "path,goodput (Mbit/s)\nGEANT,85.254\n\"sTESTA, ipsec\",7.1\n<none>,\n"
        );
        let html = t.to_html();
        assert!(html.contains("<td>&lt;none&gt;</td><td>–</td>"), "{html}");
        assert!(html.contains("<td class=\"num\">85.25</td>"), "{html}");
        roxmltree::Document::parse(&format!("<div>{}</div>", html.replace("–", "-")))
            .expect("well-formed");
    }
}
