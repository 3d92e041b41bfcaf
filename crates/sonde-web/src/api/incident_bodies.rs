//! The bodies the incident routes read and the answers they give
//! (`incidents.rs`), as types: what the OpenAPI document describes them
//! by.

use serde::Deserialize;
use std::net::IpAddr;

/// One report, or an array of 1 to 1000.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // It describes the body; parse_reports reads it.
pub(super) enum Reports {
    One(sonde_incidents::import::ReportForm),
    Many(#[schemars(length(min = 1, max = 1000))] Vec<sonde_incidents::import::ReportForm>),
}

/// A network: an IPv6 or IPv4 prefix.
#[derive(Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Network {
    pub(super) prefix: String,
}

/// A constituency made or changed.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct Code {
    pub(super) code: String,
}

/// A contact made.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct Email {
    pub(super) email: String,
}

/// A mail template made.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct Named {
    pub(super) name: String,
}

/// The incidents opened.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct Opened {
    pub(super) ids: Vec<i64>,
}

/// A comment made on an incident.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct Commented {
    pub(super) incident: i64,
}

/// An address's owner: the constituency with the longest prefix that
/// holds it, or none.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct Owner {
    pub(super) address: IpAddr,
    pub(super) owner: Option<OwnerName>,
    /// The prefix that holds it.
    pub(super) prefix: Option<String>,
}

/// A constituency, by code and name.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct OwnerName {
    pub(super) code: String,
    pub(super) name: String,
}

/// A mail sent: to whom, and the incident's state and status after it.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct Mailed {
    pub(super) sent: Vec<MailedTo>,
    pub(super) state: Option<String>,
    pub(super) status: Option<sonde_incidents::Status>,
}

/// The constituency written to, and its contacts' addresses.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(super) struct MailedTo {
    pub(super) constituency: String,
    pub(super) to: Vec<String>,
}

/// `PATCH /api/v1/constituencies/{code}`: `{"name"?, "notes"?}`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ConstituencyChange {
    pub(super) name: Option<String>,
    pub(super) notes: Option<String>,
}

/// `?prefix=` of `DELETE …/networks`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PrefixQuery {
    /// The prefix, as it was given (an IPv6 or IPv4 prefix).
    pub(super) prefix: String,
}

/// `?email=` of `DELETE …/contacts`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EmailQuery {
    /// The contact's mail address.
    pub(super) email: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct OwnerQuery {
    /// An IPv6 or IPv4 address.
    #[schemars(extend("anyOf" = [{"format": "ipv4"}, {"format": "ipv6"}]))]
    pub(super) address: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// Only this status.
    #[serde(default)]
    #[schemars(with = "Option<sonde_incidents::Status>")]
    pub(super) status: Option<String>,
    /// Only those with an address this constituency owns.
    pub(super) owner: Option<String>,
    /// At most this many (1 to 1000; 100 when absent).
    #[schemars(range(min = 1, max = 1_000))]
    pub(super) limit: Option<usize>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CommentBody {
    pub(super) text: String,
    /// The token's holder, if said: a comment is always by them.
    #[serde(default)]
    pub(super) author: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct MailBody {
    /// The mail template's name.
    pub(super) template: String,
    /// Only the contacts of this role.
    #[serde(default)]
    pub(super) role: Option<String>,
}
