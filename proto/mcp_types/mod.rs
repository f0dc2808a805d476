//! Every MCP request, result, notification and structure of revisions 2024-11-05 to 2026-07-28.
//!
//! One set of types covers all revisions: a field that exists in only some revisions is optional
//! here, and [`ProtocolVersion`] says which revision has
//! what. Names are the specification's; fields are serde `camelCase`. Every object keeps the
//! members it does not know in an `extra` map and its `_meta` as written, so a decode/encode
//! round trip loses nothing. Numbers that the spec leaves open stay `serde_json::Number`, which
//! keeps `1` and `1.0` apart.
//!
//! The [`Method`] and [`NotificationMethod`] traits tie each method name to its params and result
//! types in both directions, and [`MethodInfo`] makes the same table available at run time
//! (for routing and for the conformance round trip). No IO happens here.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::proto::version::ProtocolVersion;

/// Members of an object that this crate does not model, kept as written so they survive a
/// round trip.
pub type Extra = Map<String, Value>;

/// Which side sends a request or notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Sent by the client, handled by the server.
    ClientToServer,
    /// Sent by the server, handled by the client.
    ServerToClient,
    /// Either side may send it (`ping`, `notifications/cancelled`, `notifications/progress`).
    Both,
}

impl Direction {
    /// Whether a message going client → server (`true`) or server → client (`false`) may
    /// carry this method.
    pub const fn allows(self, client_to_server: bool) -> bool {
        match self {
            Direction::Both => true,
            Direction::ClientToServer => client_to_server,
            Direction::ServerToClient => !client_to_server,
        }
    }
}

/// A request method: its wire name, who sends it, its params and its result.
pub trait Method {
    /// The `method` string on the wire.
    const NAME: &'static str;
    /// Who sends it.
    const DIRECTION: Direction;
    /// The first revision that has it.
    const SINCE: ProtocolVersion;
    /// The first revision that no longer has it, if any.
    const REMOVED_IN: Option<ProtocolVersion> = None;
    /// The `params` object. Where the spec makes params optional, this type's `Default` stands
    /// for absent params.
    type Params: Serialize + DeserializeOwned;
    /// The `result` object of a successful response.
    type Output: Serialize + DeserializeOwned;
}

/// A notification method: its wire name, who sends it and its params. (The message itself is
/// [`jsonrpc::Notification`](crate::proto::jsonrpc::Notification).)
pub trait NotificationMethod {
    /// The `method` string on the wire.
    const NAME: &'static str;
    /// Who sends it.
    const DIRECTION: Direction;
    /// The first revision that has it.
    const SINCE: ProtocolVersion;
    /// The first revision that no longer has it, if any.
    const REMOVED_IN: Option<ProtocolVersion> = None;
    /// The `params` object (its `Default` stands for absent params).
    type Params: Serialize + DeserializeOwned;
}

/// Decodes `raw` as `T` and encodes it again, for checks that a type loses nothing.
pub type RoundTrip = fn(&RawValue) -> Result<Value, serde_json::Error>;

fn round_trip<T: Serialize + DeserializeOwned>(raw: &RawValue) -> Result<Value, serde_json::Error> {
    let typed: T = serde_json::from_str(raw.get())?;
    serde_json::to_value(&typed)
}

/// One row of the method table, available at run time.
#[derive(Clone, Copy)]
pub struct MethodInfo {
    /// The `method` string on the wire.
    pub name: &'static str,
    /// Who sends it.
    pub direction: Direction,
    /// `true` for a notification (no id, no response).
    pub is_notification: bool,
    /// The first revision that has it.
    pub since: ProtocolVersion,
    /// The first revision that no longer has it.
    pub removed_in: Option<ProtocolVersion>,
    /// Typed round trip of its params.
    pub params: RoundTrip,
    /// Typed round trip of its result (`None` for notifications).
    pub result: Option<RoundTrip>,
}

impl MethodInfo {
    /// The row for request method `M`.
    pub const fn request<M: Method>() -> MethodInfo {
        MethodInfo {
            name: M::NAME,
            direction: M::DIRECTION,
            is_notification: false,
            since: M::SINCE,
            removed_in: M::REMOVED_IN,
            params: round_trip::<M::Params>,
            result: Some(round_trip::<M::Output>),
        }
    }

    /// The row for notification method `N`.
    pub const fn notification<N: NotificationMethod>() -> MethodInfo {
        MethodInfo {
            name: N::NAME,
            direction: N::DIRECTION,
            is_notification: true,
            since: N::SINCE,
            removed_in: N::REMOVED_IN,
            params: round_trip::<N::Params>,
            result: None,
        }
    }

    /// Whether revision `v` has this method.
    pub fn exists_in(&self, v: ProtocolVersion) -> bool {
        v >= self.since && self.removed_in.is_none_or(|r| v < r)
    }
}

impl std::fmt::Debug for MethodInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MethodInfo")
            .field("name", &self.name)
            .field("direction", &self.direction)
            .field("is_notification", &self.is_notification)
            .field("since", &self.since)
            .field("removed_in", &self.removed_in)
            .finish()
    }
}

/// Declares a request method type and its [`Method`] impl.
///
/// `method!(CallTool, "tools/call", ClientToServer, CallToolRequestParams, CallToolResult, since V2024_11_05);`
/// optionally followed by `, removed V2026_07_28`.
#[macro_export]
#[doc(hidden)]
macro_rules! __mcp_method {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $dir:ident, $params:ty, $output:ty, since $since:ident $(, removed $removed:ident)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $ty;
        impl $crate::proto::mcp_types::Method for $ty {
            const NAME: &'static str = $name;
            const DIRECTION: $crate::proto::mcp_types::Direction = $crate::proto::mcp_types::Direction::$dir;
            const SINCE: $crate::proto::version::ProtocolVersion = $crate::proto::version::ProtocolVersion::$since;
            $(const REMOVED_IN: Option<$crate::proto::version::ProtocolVersion> = Some($crate::proto::version::ProtocolVersion::$removed);)?
            type Params = $params;
            type Output = $output;
        }
    };
}
pub use crate::__mcp_method as method;

/// Declares a notification method type and its [`NotificationMethod`] impl, like [`method!`].
#[macro_export]
#[doc(hidden)]
macro_rules! __mcp_notification {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $dir:ident, $params:ty, since $since:ident $(, removed $removed:ident)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $ty;
        impl $crate::proto::mcp_types::NotificationMethod for $ty {
            const NAME: &'static str = $name;
            const DIRECTION: $crate::proto::mcp_types::Direction = $crate::proto::mcp_types::Direction::$dir;
            const SINCE: $crate::proto::version::ProtocolVersion = $crate::proto::version::ProtocolVersion::$since;
            $(const REMOVED_IN: Option<$crate::proto::version::ProtocolVersion> = Some($crate::proto::version::ProtocolVersion::$removed);)?
            type Params = $params;
        }
    };
}
pub use crate::__mcp_notification as notification;

mod meta;
pub use meta::*;
mod open_enum;

mod completion;
mod content;
pub(crate) mod decode;
mod elicitation;
mod errors;
mod input;
mod lifecycle;
mod logging;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod tasks;
mod tools;
pub use completion::*;
pub use content::*;
pub use elicitation::*;
pub use errors::*;
pub use input::*;
pub use lifecycle::*;
pub use logging::*;
pub use prompts::*;
pub use resources::*;
pub use roots::*;
pub use sampling::*;
pub use tasks::*;
pub use tools::*;

/// Every method of every revision, in both directions.
static METHOD_TABLES: &[&[MethodInfo]] = &[
    lifecycle::METHODS,
    tools::METHODS,
    tasks::METHODS,
    resources::METHODS,
    prompts::METHODS,
    completion::METHODS,
    logging::METHODS,
    sampling::METHODS,
    elicitation::METHODS,
    roots::METHODS,
    input::METHODS,
];

/// The row of the method table for `name`, if any revision has that method.
pub fn find_method(name: &str) -> Option<&'static MethodInfo> {
    all_methods().find(|m| m.name == name)
}

/// Every row of the method table.
pub fn all_methods() -> impl Iterator<Item = &'static MethodInfo> {
    METHOD_TABLES.iter().flat_map(|t| t.iter())
}

/// Round trip of a result of `method`: a result whose `resultType` is `input_required`
/// (2026-07-28) is checked as an [`InputRequiredResult`], any other as the method's own result.
///
/// # Errors
/// When the result does not fit its type.
pub fn round_trip_result(method: &MethodInfo, raw: &RawValue) -> Result<Value, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "resultType", borrow)]
        result_type: Option<std::borrow::Cow<'a, str>>,
    }
    let kind: Kind<'_> = serde_json::from_str(raw.get())?;
    if kind.result_type.as_deref() == Some("input_required") {
        return round_trip::<InputRequiredResult>(raw);
    }
    match method.result {
        Some(result) => result(raw),
        None => Err(serde::de::Error::custom(format!("{} is a notification and has no result", method.name))),
    }
}
