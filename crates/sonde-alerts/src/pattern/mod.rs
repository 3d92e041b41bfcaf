//! SmokePing's alert patterns: a comma-separated list of items matched
//! against a path's latest samples, the last item against the latest
//! sample. An item is a comparison (`>0%`, `<=50ms`, `==U` for a sample
//! that is unknown) that one sample must pass, or a wildcard `*N*` that
//! takes any 0 to N samples. `>0%,*12*,>0%,*12*,>0%`: loss in three
//! samples within the last 27, the latest among them.
//!
//! Written by hand: no crate reads this syntax, and it is small.

use std::fmt;

/// What a pattern's numbers are: loss in percent, or RTT in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    LossPct,
    RttMs,
}

impl Quantity {
    fn unit(self) -> &'static str {
        match self {
            Quantity::LossPct => "%",
            Quantity::RttMs => "ms",
        }
    }
}

/// A comparison's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

/// What an item compares a sample with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Operand {
    Value(f64),
    /// `U`: the sample is unknown (no answer, no result).
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Item {
    Compare(Op, Operand),
    /// `*N*`: any 0 to N samples.
    Any(usize),
}

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    items: Vec<Item>,
    quantity: Quantity,
}

/// Why a pattern does not read: the item (1-based) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pattern item {item} '{text}': {why}")]
pub struct PatternError {
    pub item: usize,
    pub text: String,
    pub why: String,
}

/// The most samples a wildcard may take.
pub const MAX_WILDCARD: usize = 1000;

fn item(text: &str, quantity: Quantity) -> Result<Item, String> {
    if let Some(n) = text.strip_prefix('*').and_then(|t| t.strip_suffix('*')) {
        let n: usize = n
            .parse()
            .map_err(|_| "a wildcard is *N*, N a whole number".to_string())?;
        if n == 0 || n > MAX_WILDCARD {
            return Err(format!("a wildcard takes 1 to {MAX_WILDCARD} samples"));
        }
        return Ok(Item::Any(n));
    }
    let (op, rest) = [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
    ]
    .iter()
    .find_map(|(s, op)| text.strip_prefix(s).map(|r| (*op, r)))
    .ok_or_else(|| "starts with none of > >= < <= == != or *".to_string())?;
    if rest == "U" {
        return match op {
            Op::Eq | Op::Ne => Ok(Item::Compare(op, Operand::Unknown)),
            _ => Err("U (unknown) compares only with == or !=".into()),
        };
    }
    let number = rest.strip_suffix(quantity.unit()).unwrap_or(rest);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{rest}' is not a number (in {}, or U)", quantity.unit()))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("'{rest}' is not a {} value", quantity.unit()));
    }
    Ok(Item::Compare(op, Operand::Value(value)))
}

impl Pattern {
    /// Reads `text` as a pattern over `quantity`'s values.
    pub fn parse(text: &str, quantity: Quantity) -> Result<Self, PatternError> {
        let mut items = Vec::new();
        for (i, raw) in text.split(',').enumerate() {
            let t = raw.trim();
            let parsed = item(t, quantity).map_err(|why| PatternError {
                item: i + 1,
                text: t.chars().take(40).collect(),
                why,
            })?;
            items.push(parsed);
        }
        if !items.iter().any(|i| matches!(i, Item::Compare(..))) {
            return Err(PatternError {
                item: 1,
                text: text.chars().take(40).collect(),
                why: "a pattern needs at least one comparison".into(),
            });
        }
        Ok(Self { items, quantity })
    }

    pub fn quantity(&self) -> Quantity {
        self.quantity
    }

    /// The most samples the pattern can look back over: how many a
    /// caller must keep.
    pub fn span(&self) -> usize {
        self.items
            .iter()
            .map(|i| match i {
                Item::Compare(..) => 1,
                Item::Any(n) => *n,
            })
            .sum()
    }

    /// Whether the latest of `samples` (oldest first; `None`: unknown)
    /// match the pattern, its last item on the latest sample.
    pub fn matches(&self, samples: &[Option<f64>]) -> bool {
        // `fits[i][j]`: the first `i` items match, ending at sample `j`
        // (exclusive), anywhere before it. Built up from no items, so a
        // wildcard costs its width per cell, never a search.
        let (n, m) = (self.items.len(), samples.len());
        let mut fits = vec![vec![false; m + 1]; n + 1];
        fits[0] = vec![true; m + 1];
        for (i, item) in self.items.iter().enumerate() {
            for j in 0..=m {
                fits[i + 1][j] = match *item {
                    Item::Compare(op, operand) => {
                        j > 0 && fits[i][j - 1] && passes(op, operand, samples[j - 1])
                    }
                    Item::Any(w) => (0..=w.min(j)).any(|k| fits[i][j - k]),
                };
            }
        }
        fits[n][m]
    }
}

fn passes(op: Op, operand: Operand, sample: Option<f64>) -> bool {
    match (operand, sample) {
        (Operand::Unknown, s) => match op {
            Op::Eq => s.is_none(),
            Op::Ne => s.is_some(),
            _ => false,
        },
        (Operand::Value(_), None) => false,
        (Operand::Value(v), Some(s)) => match op {
            Op::Gt => s > v,
            Op::Ge => s >= v,
            Op::Lt => s < v,
            Op::Le => s <= v,
            Op::Eq => s == v,
            Op::Ne => s != v,
        },
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = self.quantity.unit();
        let items: Vec<String> = self
            .items
            .iter()
            .map(|i| match i {
                Item::Any(n) => format!("*{n}*"),
                Item::Compare(op, operand) => {
                    let op = match op {
                        Op::Gt => ">",
                        Op::Ge => ">=",
                        Op::Lt => "<",
                        Op::Le => "<=",
                        Op::Eq => "==",
                        Op::Ne => "!=",
                    };
                    match operand {
                        Operand::Unknown => format!("{op}U"),
                        Operand::Value(v) => format!("{op}{v}{unit}"),
                    }
                }
            })
            .collect();
        f.write_str(&items.join(","))
    }
}

#[cfg(test)]
mod tests;
