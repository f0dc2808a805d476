//! The conformance runner's library half: the recording format and the checks run over
//! recorded sessions. The `mcp-conformance` binary (`conformance/main.rs`) is a thin CLI on top.
//!
//! - [`recording`]: reads the JSON Lines session format of `conformance/recordings/README.md`.
//! - [`roundtrip`]: decodes every recorded message into this crate's types and checks that
//!   encoding it again gives back the same JSON.
//!
//! Replaying sessions against live peers comes with the transports; nothing here does IO
//! beyond reading the files it is given.

pub mod diff;
pub mod recording;
pub mod roundtrip;
