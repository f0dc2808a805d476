//! The `mcp-conformance` runner's engines: the live check of a server against the
//! specification, the checks run over recorded sessions, and the engines that replay and serve
//! them. The `mcp-conformance` binary (`main.rs`) is a thin
//! command line on top; `mcp-conformance-client-driver` (`client_driver.rs`) is the client it
//! drives in the official suite's client scenarios.
//!
//! - [`check`]: `mcp-conformance check`, the battery of spec checks run against a live server
//!   (stdio or Streamable HTTP) in each era it speaks, each finding tied to its rule.
//! - [`roundtrip`]: decodes every recorded message into mcpwire's types and checks that
//!   encoding it again gives back the same JSON.
//! - [`matching`]: what may differ between a recording and a live run (the rules, in one place).
//! - [`replay`]: plays a recording's client side against a live server over a transport.
//! - [`replay_http`]: plays an HTTP recording's client side as raw HTTP exchanges, checking the
//!   recorded `http` members (statuses, headers, SSE framing) too, against a URL or a `tower`
//!   Service called in process.
//! - [`serve`]: plays a recording's server side to a live client, reporting its departures.
//! - [`serve_http`]: `serve --listen`'s server (a recording's server side on mcpwire's HTTP
//!   server), to bind or to call in process.
//! - [`serve_stateless`]: the POSTs of a stateless server joined into one transport, so a
//!   2026-07-28 recording is served as one script.
//! - [`record_http`]: the HTTP capture proxy between a client and a server.
//! - [`clock`]: the clock a replayed server reads (the recording's, through libfaketime, when
//!   its answers follow the clock).
//! - [`http_body`]: the bodies the recording proxy builds.
//! - [`fixtures`]: the recordings' scratch data, recreated in a temporary directory.
//! - [`report`]: the run report, JUnit XML and the expected-failures baseline.
//!
//! The recording format and the recorders (the stdio recorder, the transport tee of
//! `mcp-bridge serve --record`) are the library's: [`mcpwire::recording`].
//!
//! Replays run over stdio ([`replay::replay_stdio`]), over HTTP ([`replay::replay_http`]: raw
//! exchanges, messages and `http` members checked) and for a client under test
//! ([`replay::replay_with_client`], which starts the client with `serve` as its server).

pub mod check;
pub mod clock;
pub mod diff;
pub mod endpoint;
pub mod fixtures;
pub mod http_body;
pub mod matching;
pub mod record_http;
pub mod replay;
pub mod replay_http;
pub mod report;
pub mod roundtrip;
pub mod serve;
pub mod serve_http;
pub mod serve_stateless;
