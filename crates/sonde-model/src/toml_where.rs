//! Where a key is in a TOML file, for errors found after the file was
//! read (a value checked against others, a rule's metric): the line of
//! `limits.max_duration`, or of `family` in the `[[alert]]` named "lossy",
//! so that the error says `agent.toml:12: …` as a parse error does.
//!
//! The file is parsed again with the `toml` crate's spanned document;
//! nothing here decides what is valid.

use toml::de::{DeArray, DeTable};

/// One step of the way to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// A key of a table.
    Key(&'a str),
    /// The `n`-th table of an array of tables (`[[step]]`), from 0.
    Index(usize),
    /// The table of an array of tables whose `name` is this.
    Named(&'a str),
}

/// The 1-based line of the value at `path` in `text`, or of the nearest
/// table on the way to it that exists (a key left out is reported where
/// its table is); `None` when the text does not parse or nothing on the
/// way is there.
pub fn line_of(text: &str, path: &[Step<'_>]) -> Option<usize> {
    let doc = DeTable::parse(text).ok()?;
    let mut at: Option<usize> = None;
    let mut table: &DeTable<'_> = doc.get_ref();
    let mut array: Option<&DeArray<'_>> = None;
    for step in path {
        let found = match (*step, array) {
            (Step::Key(k), _) => table
                .iter()
                .find(|(key, _)| key.get_ref() == k)
                .map(|(_, v)| v),
            (Step::Index(i), Some(items)) => items.get(i),
            (Step::Named(n), Some(items)) => items.iter().find(|t| {
                t.get_ref()
                    .as_table()
                    .and_then(|t| t.iter().find(|(k, _)| k.get_ref() == "name"))
                    .is_some_and(|(_, v)| v.get_ref().as_str() == Some(n))
            }),
            _ => None,
        };
        let Some(value) = found else { break };
        at = Some(value.span().start);
        array = value.get_ref().as_array();
        if let Some(t) = value.get_ref().as_table() {
            table = t;
        }
    }
    at.map(|offset| text[..offset.min(text.len())].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "port = 5201\n[limits]\nmax_duration = \"0s\"\n\n\
                        [[alert]]\nname = \"a\"\nmetric = \"loss_pct\"\n\n\
                        [[alert]]\nname = \"lossy\"\nfamily = \"v7\"\n";

    #[test]
    fn a_key_is_found_on_its_line_through_tables_and_arrays_of_tables() {
        let line = |p: &[Step<'_>]| line_of(FILE, p);
        assert_eq!(line(&[Step::Key("port")]), Some(1));
        assert_eq!(
            line(&[Step::Key("limits"), Step::Key("max_duration")]),
            Some(3)
        );
        let lossy = [
            Step::Key("alert"),
            Step::Named("lossy"),
            Step::Key("family"),
        ];
        assert_eq!(line(&lossy), Some(11));
        assert_eq!(
            line(&[Step::Key("alert"), Step::Index(0), Step::Key("metric")]),
            Some(7)
        );
        // A key left out: where its table is.
        let missing = [Step::Key("alert"), Step::Named("a"), Step::Key("above")];
        assert!(
            matches!(line(&missing), Some(5..=6)),
            "{:?}",
            line(&missing)
        );
        assert_eq!(line(&[Step::Key("nothing")]), None);
        assert_eq!(line_of("= broken", &[Step::Key("port")]), None);
    }
}
