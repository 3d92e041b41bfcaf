//! The versioned loader: reads every result document sonde has ever
//! written into the current [`TestResult`].
//!
//! A document says its layout in `format_version`. The current one is
//! read as it is; an older one is read in its own types and converted
//! by an explicit upgrade ([`crate::v1`]), so an archived result never
//! becomes unreadable. A document from a newer sonde is refused by name,
//! not guessed at.

use crate::{ResultId, TestResult, RESULT_FORMAT_VERSION};
use serde::Deserialize;

/// Why a document could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("not JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("not a sonde result: it has no format_version")]
    NoVersion,
    #[error(
        "result format {found} is newer than this sonde reads (up to {RESULT_FORMAT_VERSION}): \
         upgrade sonde"
    )]
    TooNew { found: u32 },
    #[error("result format {0} was never written by sonde")]
    Unknown(u32),
    #[error("a format-{RESULT_FORMAT_VERSION} result: {0}")]
    Malformed(#[source] serde_json::Error),
    #[error(transparent)]
    V1(#[from] crate::v1::V1Error),
}

#[derive(Deserialize)]
struct Version {
    format_version: Option<u32>,
}

/// Loads a result document from its JSON text.
pub fn load_result(text: &str) -> Result<TestResult, LoadError> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(LoadError::Json)?;
    load_value(doc)
}

/// Loads a result document already parsed as JSON.
pub fn load_value(doc: serde_json::Value) -> Result<TestResult, LoadError> {
    let version = Version::deserialize(&doc)
        .ok()
        .and_then(|v| v.format_version)
        .ok_or(LoadError::NoVersion)?;
    match version {
        RESULT_FORMAT_VERSION => TestResult::deserialize(doc).map_err(LoadError::Malformed),
        // Format 3 added the trace test (`test = "trace"`, its `spec` and
        // `trace` figures); a format-2 document is a format-3 one without
        // them, read as it is and stamped with the version it now has.
        2 => {
            let mut r = TestResult::deserialize(doc).map_err(LoadError::Malformed)?;
            r.format_version = RESULT_FORMAT_VERSION;
            Ok(r)
        }
        1 => {
            // Format 1 had no id: derive one from the document, so that
            // the same old file always gets the same id.
            let id = ResultId::of_document(doc.to_string().as_bytes());
            Ok(crate::v1::upgrade(doc, id)?)
        }
        v if v > RESULT_FORMAT_VERSION => Err(LoadError::TooNew { found: v }),
        v => Err(LoadError::Unknown(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_told_apart() {
        assert!(matches!(load_result("{}"), Err(LoadError::NoVersion)));
        assert!(matches!(load_result("[1"), Err(LoadError::Json(_))));
        assert!(matches!(
            load_result(r#"{"format_version": 9}"#),
            Err(LoadError::TooNew { found: 9 })
        ));
        assert!(matches!(
            load_result(r#"{"format_version": 0}"#),
            Err(LoadError::Unknown(0))
        ));
        assert!(matches!(
            load_result(r#"{"format_version": 1, "test": "dns"}"#),
            Err(LoadError::V1(crate::v1::V1Error::UnknownTest(_)))
        ));
        assert!(matches!(
            load_result(r#"{"format_version": 2, "test": "tcp"}"#),
            Err(LoadError::Malformed(_))
        ));
    }

    /// A ping result as the sonde of format 2 wrote it (`sonde ping ::1
    /// -c 2 -J`, before the trace test came).
    #[test]
    fn a_format_2_document_reads_as_format_3() {
        let text = include_str!("fixtures/ping-format-2.json");
        let r = load_result(text).unwrap();
        assert_eq!(r.format_version, RESULT_FORMAT_VERSION);
        assert_eq!(r.test, crate::TestKind::Ping);
        assert_eq!(r.series.len(), 1);
        assert_eq!(r.trace, None);
        let doc: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(r.id.to_string(), doc["id"].as_str().unwrap());
        // Saved again, it is the same document but for its version.
        let mut again = serde_json::to_value(&r).unwrap();
        again["format_version"] = 2.into();
        assert_eq!(again, doc);
    }
}
