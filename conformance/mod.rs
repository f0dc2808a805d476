//! The conformance runner's library half: the recording format, the checks run over recorded
//! sessions, and the engines that record, replay and serve sessions. The `mcp-conformance`
//! binary (`conformance/main.rs`) is a thin CLI on top.
//!
//! - [`recording`]: reads the JSON Lines session format of `conformance/recordings/README.md`.
//! - [`roundtrip`]: decodes every recorded message into this crate's types and checks that
//!   encoding it again gives back the same JSON.
//! - [`matching`]: what may differ between a recording and a live run (the rules, in one place).
//! - [`replay`]: plays a recording's client side against a live server over a transport.
//! - `replay_http`: plays an HTTP recording's client side as raw HTTP exchanges, checking the
//!   recorded `http` members (statuses, headers, SSE framing) too.
//! - [`serve`]: plays a recording's server side to a live client, reporting its departures.
//! - `serve_stateless` (feature `http`): the POSTs of a stateless server joined into one
//!   transport, so a 2026-07-28 recording is served as one script.
//! - [`record`]: the stdio recorder that sits between a client and a server.
//! - `record_http` (feature `http`): the HTTP capture proxy between a client and a server.
//! - [`tee`]: [`RecordingTransport`], a transport wrapper that records a live session (the
//!   bridge's `--record DIR`) in the same format.
//! - [`clock`]: the clock a replayed server reads (the recording's, through libfaketime, when
//!   its answers follow the clock).
//! - [`fixtures`]: the recordings' scratch data, recreated in a temporary directory.
//! - [`report`]: the run report, JUnit XML and the expected-failures baseline.
//!
//! With the feature `recording` alone (what `mcp-bridge --record` needs) only the format and the
//! recorders are compiled: [`recording`], [`record`], [`tee`] and [`clock`]; the rest is the
//! runner, feature `conformance`.
//!
//! Replays run over stdio ([`replay::replay_stdio`]), over HTTP ([`replay::replay_http`]: raw
//! exchanges, messages and `http` members checked) and for a client under test
//! ([`replay::replay_with_client`], which starts the client with `serve` as its server).

// Feature `recording`: the format and the recorders.
pub mod clock;
pub mod record;
pub mod recording;
pub mod tee;

// Feature `conformance`: the runner.
#[cfg(feature = "conformance")]
pub mod diff;
#[cfg(feature = "conformance")]
pub mod fixtures;
#[cfg(feature = "conformance")]
pub mod matching;
#[cfg(all(feature = "conformance", feature = "http"))]
pub mod record_http;
#[cfg(feature = "conformance")]
pub mod replay;
#[cfg(all(feature = "conformance", feature = "http"))]
pub mod replay_http;
#[cfg(feature = "conformance")]
pub mod report;
#[cfg(feature = "conformance")]
pub mod roundtrip;
#[cfg(feature = "conformance")]
pub mod serve;
#[cfg(all(feature = "conformance", feature = "http"))]
pub mod serve_stateless;

pub use tee::{Recorder, RecordingDir, RecordingTransport, TeeOptions};
