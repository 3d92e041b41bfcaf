//! Which results a query selects: one filter for `list`, `export` and
//! `stats`, turned into one SQL clause.

use crate::sql::Value;

/// Which results to select (each `None`: any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultFilter {
    /// `tcp`, `udp`, `ping`.
    pub test: Option<String>,
    /// The host the test went to, as written.
    pub target: Option<String>,
    pub campaign: Option<String>,
    /// Results that started at or after this (ns since the epoch) …
    pub since_ns: Option<i64>,
    /// … and before this.
    pub until_ns: Option<i64>,
    /// `v6` or `v4`.
    pub family: Option<String>,
    /// `forward`, `reverse` or `bidir`.
    pub direction: Option<String>,
    /// Only results kept with this label (`key`, `value`).
    pub label: Option<(String, String)>,
    /// Results of methods' trials too (`list` leaves them out by default
    /// only when asked; every query includes them unless this is false).
    pub trials: bool,
    /// At most this many, newest first (where a query lists).
    pub limit: i64,
}

impl Default for ResultFilter {
    fn default() -> Self {
        Self {
            test: None,
            target: None,
            campaign: None,
            since_ns: None,
            until_ns: None,
            family: None,
            direction: None,
            label: None,
            trials: true,
            limit: 100,
        }
    }
}

impl ResultFilter {
    /// The `WHERE` clause on `results` (unqualified columns) and its
    /// parameters, numbered from `$1`.
    pub(crate) fn clause(&self) -> (String, Vec<Value>) {
        let mut sql = String::from("1 = 1");
        let mut params = Vec::new();
        let mut add = |column: &str, v: Value, op: &str| {
            params.push(v);
            sql += &format!(" AND {column} {op} ${}", params.len());
        };
        let text = |s: &String| Value::Text(Some(s.clone()));
        if let Some(t) = &self.test {
            add("test", text(t), "=");
        }
        if let Some(t) = &self.target {
            add("target", text(t), "=");
        }
        if let Some(c) = &self.campaign {
            add("campaign", text(c), "=");
        }
        if let Some(ns) = self.since_ns {
            add("start_ns", Value::Int(Some(ns)), ">=");
        }
        if let Some(ns) = self.until_ns {
            add("start_ns", Value::Int(Some(ns)), "<");
        }
        if let Some(f) = &self.family {
            add("family", text(f), "=");
        }
        if let Some(d) = &self.direction {
            add("direction", text(d), "=");
        }
        if let Some((k, v)) = &self.label {
            params.push(text(k));
            params.push(text(v));
            sql += &format!(
                " AND id IN (SELECT result_id FROM result_labels WHERE key = ${} AND value = ${})",
                params.len() - 1,
                params.len()
            );
        }
        if !self.trials {
            sql += " AND method_id IS NULL";
        }
        (sql, params)
    }
}
