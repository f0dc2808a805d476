//! Every HTTP recording replayed against the HTTP core without a socket: the recording's server
//! side played by `serve --listen`'s server ([`RecordedHttpServer`]: mcpwire's Streamable HTTP
//! server) in an in-process `HttpService`, its client side re-issued by the raw HTTP replayer
//! through that Service ([`replay_raw_http_service`]), every status, kept header, SSE framing
//! and message checked as over a socket. On tokio's paused clock: the replayer's waits (a
//! resumption waits as the recorded client did, the settling after the script) cost nothing.
//!
//! The recordings are of other servers (server-everything, the Python fixtures); where our
//! server's framing differs from theirs in a way the spec allows, the difference is one of
//! [`support::SERVE_LISTEN_FRAMING`], as for `serve --listen` over a socket
//! (`conformance_http::http_recordings_replay_against_serve_listen_of_themselves`). Anything
//! else fails. `../shared/recordings` holds copies of the same HTTP recordings.

use crate::support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_conformance::matching::{Matcher, Rules};
use mcp_conformance::replay::ReplayOptions;
use mcp_conformance::replay_http::replay_raw_http_service;
use mcp_conformance::serve::Event;
use mcp_conformance::serve_http::{Events, RecordedHttpServer};
use mcpwire::recording::Recording;
use mcpwire::transport::sse_http::HttpService;

/// Where our server answers a recorded session of another server otherwise, on purpose:
/// (recording, a part of the difference as the replayer words it, why). Each
/// must still show (a listed difference that stops showing fails the test: remove it), and
/// nothing else may. Only everything-http-errors, hand-made requests to the TypeScript SDK's
/// error paths, has any.
const SERVERS_DIFFER: [(&str, &str, &str); 10] = [
    (
        "everything-http-errors",
        r#"seq 2 s2c tools/list response: $.error.message: expected "Bad Request: Server not initialized", got "Bad Request: Mcp-Session-Id header is required""#,
        "wording: the same 400 and -32000 for a request without a session id",
    ),
    (
        "everything-http-errors",
        "seq 3 c2s tools/list request: http.status: expected 400, got 404",
        "an unknown session id: 404 as the spec says (2025-11-25 transports, session management); \
         server-everything's own router answers 400",
    ),
    (
        "everything-http-errors",
        "seq 4 s2c tools/list response: $.error.code: expected -32000, got -32001",
        "the same: -32001 with the 404, as the TypeScript SDK's transport answers it",
    ),
    (
        "everything-http-errors",
        "s2c initialize response: $.id: expected null, got (missing)",
        "on purpose: an error whose request id could not be read leaves the id member out, as MCP \
         2026-07-28 does (proto/jsonrpc.rs, ErrorResponse); JSON-RPC 2.0 and the TypeScript SDK \
         write null (the 406 and 415 of seq 6 and 8)",
    ),
    (
        "everything-http-errors",
        "seq 14 s2c  response: $.id: expected null, got (missing)",
        "the same gap for a GET's 406",
    ),
    (
        "everything-http-errors",
        "seq 15 c2s batch POST /mcp: http.status: expected 200, got 400",
        "a JSON-RPC batch at 2025-11-25: refused (batching was removed in 2025-06-18); the \
         TypeScript SDK still serves it",
    ),
    (
        "everything-http-errors",
        "on the response to POST seq 15, got nothing (its stream ended)",
        "the batch's priming event and answers (seq 16 to 18), which our 400 does not have",
    ),
    (
        "everything-http-errors",
        "json-rpc batches are not allowed in protocol version 2025-11-25",
        "the body of that 400, -32600",
    ),
    (
        "everything-http-errors",
        "seq 20 s2c ping response: $.error.message: expected …supported protocol version: 1999-01-01",
        "wording: the same 400 and -32000, listing the versions this server supports",
    ),
    (
        "everything-http-errors",
        "seq 23 s2c ping response: $: expected this on the response to POST seq 21, got nothing (timed out)",
        "the recorded server's script (serve) still waits for the batch's requests, which our \
         server refused: the next ping is not answered by the script, not lost by the core",
    ),
];

/// What one in-process replay found: the replayer's differences, and the server script's.
struct Outcome {
    replayed: Vec<String>,
    served: Vec<String>,
}

async fn replay_in_process(path: &Path) -> Outcome {
    replay_altered_in_process(path, |_| {}).await
}

/// [`replay_in_process`] of the recording at `path` changed by `edit`.
async fn replay_altered_in_process(path: &Path, edit: impl FnOnce(&mut Recording)) -> Outcome {
    let mut recording = Recording::read(path).unwrap();
    edit(&mut recording);
    let matcher = || Matcher::new(Rules::for_recording(path).unwrap(), None);
    let served = Arc::new(Mutex::new(Vec::new()));
    let events: Events = {
        let served = served.clone();
        Arc::new(move |event: Event<'_>| {
            if let Event::Failure(failure) = event {
                served.lock().unwrap().push(failure.to_string());
            }
        })
    };
    let (server, app) = RecordedHttpServer::new(Arc::new(recording.clone()), Arc::new(matcher()), events);
    let service = HttpService::new(server.config.clone(), app).await.unwrap();
    let failures = replay_raw_http_service(&recording, service.clone(), &mut matcher(), ReplayOptions::default()).await;
    service.shutdown().await;
    server.stop();
    server.running.wait_until(tokio::time::Instant::now() + Duration::from_secs(5)).await;
    assert_eq!(server.running.count(), 0, "every script ended with the service");
    let served = served.lock().unwrap().clone();
    Outcome { replayed: failures.iter().map(ToString::to_string).collect(), served }
}

#[tokio::test(start_paused = true)]
async fn every_http_recording_replays_against_the_core_without_a_socket() {
    let files = support::recordings_with_transport(|t| matches!(t, "streamable-http" | "sse"));
    let names: Vec<String> = files.iter().map(|f| f.file_stem().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, crate::conformance_client_http::HTTP_RECORDINGS, "a new HTTP recording is replayed here too");
    let mut unexplained = Vec::new();
    let mut seen = vec![false; SERVERS_DIFFER.len()];
    for (file, name) in files.iter().zip(&names) {
        let outcome = replay_in_process(file).await;
        for failure in &outcome.replayed {
            if support::SERVE_LISTEN_FRAMING.iter().any(|known| failure.contains(known)) {
                continue;
            }
            let listed =
                SERVERS_DIFFER.iter().position(|(recording, known, _)| recording == name && failure.contains(known));
            match listed {
                Some(at) => seen[at] = true,
                None => unexplained.push(format!("{name}: {failure}")),
            }
        }
        for failure in &outcome.served {
            unexplained.push(format!("{name} (server side): {failure}"));
        }
    }
    assert!(unexplained.is_empty(), "{}", unexplained.join("\n"));
    let stale: Vec<_> = SERVERS_DIFFER.iter().zip(&seen).filter(|(_, seen)| !**seen).map(|(entry, _)| entry).collect();
    assert!(stale.is_empty(), "listed differences that no longer show (remove them): {stale:#?}");
}

#[tokio::test(start_paused = true)]
async fn an_altered_recording_is_caught_in_process_with_the_field_named() {
    let core = support::repo_path("conformance/recordings/everything-http-core-2025-11-25.jsonl");
    // seq 4: the 202 to notifications/initialized recorded as 200.
    let outcome =
        replay_altered_in_process(&core, |r| r.entries[3].http.as_mut().unwrap()["status"] = 200.into()).await;
    let status = "seq 4 c2s notifications/initialized notification: http.status: expected 200, got 202";
    assert!(outcome.replayed.iter().any(|f| f == status), "{:#?}", outcome.replayed);
    // seq 11: the ping's answer recorded as a JSON body rather than an SSE event.
    let outcome = replay_altered_in_process(&core, |r| {
        r.entries[10].http.as_mut().unwrap()["headers"]["content-type"] = "application/json".into()
    })
    .await;
    let framing =
        r#"seq 11 s2c ping response: http.headers.content-type: expected "application/json", got "text/event-stream""#;
    assert!(outcome.replayed.iter().any(|f| f == framing), "{:#?}", outcome.replayed);
}
