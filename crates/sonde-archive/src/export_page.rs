//! Exports a page at a time: the results a filter selects, oldest first,
//! after a cursor (the last result of the page before), read in chunks so
//! that an export of any size holds one chunk in memory, not the whole.

use crate::filter::ResultFilter;
use crate::query::{ExportRows, INTERVAL_COLUMNS, RESULT_COLUMNS};
use crate::sql::Value;
use crate::{ArchiveError, Store};

/// Where an export page goes on from: the start and id of the last
/// result of the page before (`START_NS.ID` in a URL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub start_ns: i64,
    pub id: String,
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.start_ns, self.id)
    }
}

impl std::str::FromStr for Cursor {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("cursor {s:?}: not one this API gave (START_NS.ID)");
        let (ns, id) = s.split_once('.').ok_or_else(bad)?;
        let start_ns = ns.parse().map_err(|_| bad())?;
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(bad());
        }
        Ok(Cursor {
            start_ns,
            id: id.to_string(),
        })
    }
}

/// What an export page holds: rows of columns, or result documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageOf {
    Rows(ExportRows),
    Documents,
}

/// One chunk of an export.
#[derive(Debug)]
pub enum Chunk {
    Rows(Vec<Vec<Value>>),
    /// The results' JSON documents as kept.
    Documents(Vec<String>),
}

impl Store {
    /// The cursors of the next `n` results `filter` selects after
    /// `after`, oldest first (the filter's own limit is not used).
    pub fn page_cursors(
        &mut self,
        filter: &ResultFilter,
        after: Option<&Cursor>,
        n: usize,
    ) -> Result<Vec<Cursor>, ArchiveError> {
        self.cursors(filter, after, n, 0)
    }

    /// The cursor of the `nth` (from 1) result `filter` selects after
    /// `after`, if there are that many: where a page of `nth` ends.
    pub fn page_end(
        &mut self,
        filter: &ResultFilter,
        after: Option<&Cursor>,
        nth: usize,
    ) -> Result<Option<Cursor>, ArchiveError> {
        Ok(self.cursors(filter, after, 1, nth.saturating_sub(1))?.pop())
    }

    fn cursors(
        &mut self,
        filter: &ResultFilter,
        after: Option<&Cursor>,
        n: usize,
        skip: usize,
    ) -> Result<Vec<Cursor>, ArchiveError> {
        let (mut clause, mut params) = filter.clause();
        if let Some(c) = after {
            params.push(Value::Int(Some(c.start_ns)));
            let ns = params.len();
            params.push(Value::Text(Some(c.id.clone())));
            clause += &format!(
                " AND (start_ns > ${ns} OR (start_ns = ${ns} AND id > ${}))",
                params.len()
            );
        }
        params.push(Value::Int(Some(i64::try_from(n).unwrap_or(i64::MAX))));
        params.push(Value::Int(Some(i64::try_from(skip).unwrap_or(i64::MAX))));
        let sql = format!(
            "SELECT start_ns, id FROM results WHERE {clause} ORDER BY start_ns, id LIMIT ${} \
             OFFSET ${}",
            params.len() - 1,
            params.len()
        );
        Ok(self
            .backend
            .sql()
            .rows(&sql, &params)?
            .iter()
            .filter_map(|r| {
                Some(Cursor {
                    start_ns: r.first()?.int()?,
                    id: r.get(1)?.text()?.to_string(),
                })
            })
            .collect())
    }

    /// The columns of an export of `what`.
    pub fn export_columns(what: ExportRows) -> Vec<&'static str> {
        match what {
            ExportRows::Results => RESULT_COLUMNS.to_vec(),
            ExportRows::Intervals => INTERVAL_COLUMNS.to_vec(),
        }
    }

    /// The rows or documents of the results `ids` (as `page_cursors`
    /// gave them), in their order.
    pub fn export_chunk(&mut self, ids: &[Cursor], of: PageOf) -> Result<Chunk, ArchiveError> {
        let marks: Vec<String> = (1..=ids.len()).map(|i| format!("${i}")).collect();
        let params: Vec<Value> = ids
            .iter()
            .map(|c| Value::Text(Some(c.id.clone())))
            .collect();
        let within = marks.join(", ");
        if ids.is_empty() {
            return Ok(match of {
                PageOf::Documents => Chunk::Documents(Vec::new()),
                PageOf::Rows(_) => Chunk::Rows(Vec::new()),
            });
        }
        match of {
            PageOf::Documents => {
                let sql =
                    format!("SELECT doc FROM results WHERE id IN ({within}) ORDER BY start_ns, id");
                Ok(Chunk::Documents(self.backend.sql().texts(&sql, &params)?))
            }
            PageOf::Rows(ExportRows::Results) => {
                let sql = format!(
                    "SELECT {} FROM results WHERE id IN ({within}) ORDER BY start_ns, id",
                    RESULT_COLUMNS.join(", ")
                );
                Ok(Chunk::Rows(self.backend.sql().rows(&sql, &params)?))
            }
            PageOf::Rows(ExportRows::Intervals) => {
                let cols = crate::query::interval_select();
                let sql = format!(
                    "SELECT {} FROM intervals i JOIN results r ON r.id = i.result_id WHERE \
                     i.result_id IN ({within}) ORDER BY r.start_ns, r.id, i.direction, \
                     i.size_bytes, i.start_s",
                    cols.join(", ")
                );
                Ok(Chunk::Rows(self.backend.sql().rows(&sql, &params)?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_what_it_wrote_and_refuses_the_rest() {
        let c = Cursor {
            start_ns: 1_700_000_000_000_000_000,
            id: "0f3c2a4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b".into(),
        };
        assert_eq!(c.to_string().parse::<Cursor>().unwrap(), c);
        for bad in ["", "12", "x.0f3c", "12.", "12.0f3c' OR 1=1"] {
            assert!(bad.parse::<Cursor>().is_err(), "{bad}");
        }
    }
}
