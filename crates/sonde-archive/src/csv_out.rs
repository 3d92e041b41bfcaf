//! Exported rows as CSV: the one writer `sonde results export` and the
//! API's export share. Empty cells for nulls, booleans as words, and a
//! `time_utc` column (RFC 3339) beside a row's time in nanoseconds.

use crate::sql::Value;
use std::io::Write;

/// A cell as CSV text: empty for null.
fn cell(column: &str, v: &Value) -> String {
    match (column, v) {
        // SQLite keeps booleans as 0 and 1.
        ("interrupted" | "omitted", Value::Int(Some(i))) => (*i != 0).to_string(),
        (_, Value::Text(t)) => t.clone().unwrap_or_default(),
        (_, Value::Int(i)) => i.map(|i| i.to_string()).unwrap_or_default(),
        (_, Value::Real(r)) => r.map(|r| r.to_string()).unwrap_or_default(),
        (_, Value::Bool(b)) => b.to_string(),
        // An array is a parameter of a batch, never a row's cell.
        (_, Value::Texts(_) | Value::Ints(_) | Value::Reals(_)) => String::new(),
    }
}

/// Writes `columns` and `rows` (as [`Store::export_rows`](crate::Store::export_rows)
/// gives them) to `out`; `utc` writes a time in ns as RFC 3339.
pub fn write_csv(
    columns: &[&str],
    rows: &[Vec<Value>],
    out: impl Write,
    utc: impl Fn(i64) -> String,
) -> Result<(), csv::Error> {
    write_csv_part(columns, rows, out, utc, true)
}

/// As [`write_csv`], for one part of a longer export: the header row only
/// if `header` (the first part).
pub fn write_csv_part(
    columns: &[&str],
    rows: &[Vec<Value>],
    out: impl Write,
    utc: impl Fn(i64) -> String,
    header: bool,
) -> Result<(), csv::Error> {
    let time_col = columns
        .iter()
        .position(|c| *c == "start_ns" || *c == "at_ns");
    let mut w = csv::Writer::from_writer(out);
    if header {
        let mut names: Vec<&str> = columns.to_vec();
        if time_col.is_some() {
            names.push("time_utc");
        }
        w.write_record(&names)?;
    }
    for row in rows {
        let mut rec: Vec<String> = row.iter().zip(columns).map(|(v, c)| cell(c, v)).collect();
        if let Some(i) = time_col {
            rec.push(
                row.get(i)
                    .and_then(Value::int)
                    .map(&utc)
                    .unwrap_or_default(),
            );
        }
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(())
}
