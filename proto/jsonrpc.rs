//! The JSON-RPC 2.0 message model (placeholder: full version in progress).

use serde::{Deserialize, Serialize};

/// A request id: an integer or a string, kept as the peer wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}
