//! Logging: the eight [`LoggingLevel`]s, `logging/setLevel` (session era; 2026-07-28 drops it in
//! favour of a per-request level in `_meta`) and the `notifications/message` log entries a
//! server sends.
//!
//! Not here: how a server decides what to send; [`LoggingLevel`] only orders the levels so that
//! such a filter can compare them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::*;

/// Severity of a log message, the syslog levels of RFC 5424.
///
/// Ordered from least to most severe, so `level >= threshold` tells whether to send a message.
/// The set is closed: it has not changed in any revision, and an ordering needs every value
/// known, so an unknown level is a decode error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Detailed debugging information.
    Debug,
    /// Informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// All levels, least severe first.
    pub const ALL: [LoggingLevel; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The string on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

impl std::fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Params of `logging/setLevel`: the least severe level the client wants to receive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetLevelRequestParams {
    /// The threshold.
    pub level: LoggingLevel,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of `notifications/message`: one log entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageNotificationParams {
    /// Its severity.
    pub level: LoggingLevel,
    /// Which logger wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The payload: any JSON (a string, an object, ...).
    pub data: Value,
    /// Notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

method!(
    /// `logging/setLevel`: set the threshold of `notifications/message`.
    SetLevel, "logging/setLevel", ClientToServer, SetLevelRequestParams, EmptyResult, since V2024_11_05, removed V2026_07_28
);
notification!(
    /// `notifications/message`: a log entry from the server.
    LoggingMessage, "notifications/message", ServerToClient, LoggingMessageNotificationParams, since V2024_11_05
);

/// Every method this module declares.
pub(crate) const METHODS: &[MethodInfo] =
    &[MethodInfo::request::<SetLevel>(), MethodInfo::notification::<LoggingMessage>()];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::version::ProtocolVersion;
    use serde_json::json;

    fn rt<T: Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
        let t: T = serde_json::from_value(v.clone()).expect("decode");
        assert_eq!(serde_json::to_value(&t).expect("encode"), v);
        t
    }

    #[test]
    fn levels_are_ordered_by_severity() {
        assert!(LoggingLevel::Debug < LoggingLevel::Info);
        assert!(LoggingLevel::Warning < LoggingLevel::Error);
        assert!(LoggingLevel::Alert < LoggingLevel::Emergency);
        let mut sorted = LoggingLevel::ALL;
        sorted.sort();
        assert_eq!(sorted, LoggingLevel::ALL);
        for l in LoggingLevel::ALL {
            assert_eq!(serde_json::to_value(l).unwrap(), json!(l.as_str()));
        }
        assert!(serde_json::from_value::<LoggingLevel>(json!("verbose")).is_err());
    }

    #[test]
    fn set_level_and_message() {
        let p: SetLevelRequestParams = rt(json!({"level": "info"}));
        assert_eq!(p.level, LoggingLevel::Info);
        let m: LoggingMessageNotificationParams =
            rt(json!({"level": "error", "logger": "db", "data": {"error": "x", "n": 1.0}}));
        assert!(m.level >= LoggingLevel::Warning);
        assert_eq!(m.data["n"], json!(1.0));
        let m: LoggingMessageNotificationParams = rt(json!({"level": "debug", "data": null}));
        assert!(m.data.is_null() && m.logger.is_none());
    }

    #[test]
    fn method_rows() {
        let set = &METHODS[0];
        assert_eq!(set.name, "logging/setLevel");
        assert_eq!(set.removed_in, Some(ProtocolVersion::V2026_07_28));
        assert_eq!(METHODS[1].direction, Direction::ServerToClient);
    }
}
