//! `mcp-conformance-client-driver`: drives mcpwire's typed client through the client side of a recorded session, so that
//! `mcp-conformance replay --client` can check our client against the recorded server:
//!
//! ```sh
//! mcp-conformance replay conformance/recordings/everything-tools.jsonl \
//!   --client "target/debug/mcp-conformance-client-driver --fixtures {fixtures} {recording}"
//! ```
//!
//! Usage: `mcp-conformance-client-driver [--fixtures DIR] RECORDING SERVER_CMD ARGS...` — the runner
//! appends the server command (the recorded server) to the client command it is given — or
//! `mcp-conformance-client-driver [--fixtures DIR] RECORDING URL` for an HTTP recording, the runner
//! appending the URL of `serve --listen`: one word starting with `http://` or `https://`, reached
//! with [`HttpClientTransport`] (the legacy HTTP+SSE transport when the recording's `transport`
//! is `sse`; the URL is then the `/sse` stream).
//!
//! The handshake is [`Client::connect`] with the recorded `initialize` params (clientInfo,
//! capabilities, offered version, one we do not know offered as written), preceded by a
//! `server/discover` probe when the recording starts with one
//! ([`EraPolicy::Auto`](mcpwire::client::EraPolicy::Auto); without one
//! [`EraPolicy::Legacy`](mcpwire::client::EraPolicy::Legacy), so no probe the recording lacks
//! is sent; a 2026-07-28 session has only the probe). Then every
//! recorded client request goes through [`Client::request`] with the method type of its name
//! and the recorded params decoded into that type's params, in the recorded order; params that
//! do not fit the type (a test of the server's validation) go through [`Client::request_raw`]. A request whose response was recorded before the
//! client's next message is awaited before going on; the others run concurrently, and a
//! recorded `notifications/cancelled` drops the call's future (which is how our client
//! cancels). `subscriptions/listen` goes through [`Client::listen`]; a stream the recording
//! leaves open is dropped at its end. Other notifications have no typed API: they are sent as recorded on the
//! transport. Server requests are answered by the client itself: `ping`, and `roots/list`,
//! `sampling/createMessage`, `elicitation/create` by the handlers declared for what the recorded
//! client declared, which give the recorded client's answers (see [`Answers`]), those of the
//! recorded `inputResponses` (2026-07-28) included; the recorded retries that carried them are
//! not issued, since the client's multi-round loop sends its own.
//!
//! What a client through its API cannot send is not sent, and each is named on stderr (`not
//! issued: seq N: why`). On HTTP recordings these are the exchanges the recorded server refused
//! at the HTTP level before any session saw them ([`rejected_at_http_level`]: hand-made bad
//! headers, an unknown session, a request after DELETE), which the runner expects of no
//! client. A recorded JSON-RPC batch is issued as its requests, concurrently: the typed API
//! has no batch (MCP dropped batches in 2025-06-18), and the messages are what is compared.
//! Nor does the driver abandon a stream to resume it: the transport's resumption is not
//! exercised (`replay --server-url` checks that on the server side).
//!
//! Prints one JSON line per request (its outcome) on stdout. What it could not send for want of
//! a method type goes to stderr, and the exit status is then 3; 1 when the connection failed, 2
//! on usage errors.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_conformance::serve::rejected_at_http_level;
use mcpwire::client::{Client, ClientOptions, ElicitationModes};
use mcpwire::proto::jsonrpc::{ErrorCode, ErrorObject, Message};
use mcpwire::proto::mcp_types::{
    self as types, CallTool, CancelTask, ClientCapabilities, Complete, CreateMessage, CreateMessageRequestParams,
    CreateMessageResult, Elicit, ElicitRequestParams, ElicitResult, GetPrompt, GetTask, GetTaskPayload, Implementation,
    ListPrompts, ListResourceTemplates, ListResources, ListRoots, ListRootsResult, ListTasks, ListTools, Method, Ping,
    ReadResource, SetLevel, Subscribe, SubscriptionsListen, SubscriptionsListenRequestParams, Unsubscribe,
};
use mcpwire::proto::session::RequestOptions;
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::recording::{Dir, Recording};
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport};
use mcpwire::transport::stdio::ChildCommand;
use mcpwire::transport::Transport;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;
use serde_json::Value;

types::method!(
    /// `unknown/method`: not MCP; recorded to see the server answer -32601. Declared here as a
    /// host would declare an extension method.
    UnknownMethod, "unknown/method", ClientToServer, types::EmptyParams, types::EmptyResult, since V2024_11_05
);

const FIXTURES_RECORDED: &str = "/tmp/mcp-fixtures";

type Outcome = Result<Value, String>;

/// Why a recorded request was not sent.
struct NotSent(String);

/// A call left running: its recorded seq and method, and the task.
type Call = tokio::task::JoinHandle<Result<Outcome, NotSent>>;

async fn call<M, T: Transport>(client: &Client<T>, params: Value) -> Result<Outcome, NotSent>
where
    M: Method,
    M::Params: Send + Sync + 'static,
    M::Output: Clone + Send + Sync + 'static,
{
    let typed: M::Params = match serde_json::from_value(params.clone()) {
        Ok(typed) => typed,
        // Params the typed API cannot express (a test of the server's validation): sent as
        // recorded through the untyped call.
        Err(_) => {
            return Ok(match client.request_raw(M::NAME, Some(params), RequestOptions::default()).await {
                Ok(result) => Ok(result),
                Err(e) => Err(e.to_string()),
            })
        }
    };
    Ok(match client.request::<M>(typed, RequestOptions::default()).await {
        Ok(output) => serde_json::to_value(output).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    })
}

/// The recorded client's answers to the server's requests, handed out by the client handlers:
/// for a request, the first unused answer of its method whose recorded request had the same
/// params, else the first unused answer of its method.
#[derive(Default)]
struct Answers {
    entries: Mutex<Vec<Answer>>,
}

/// (method, recorded params, recorded result or error, used).
type Answer = (String, Value, Result<Value, Value>, bool);

impl Answers {
    fn from_recording(all: &[(Dir, Step)]) -> Answers {
        let mut entries = Vec::new();
        // 2026-07-28: the input requests of an `input_required` result, by key, and the
        // answers the client's retry carried under the same keys.
        let mut asked: HashMap<String, (String, Value)> = HashMap::new();
        for (dir, step) in all {
            match dir {
                Dir::ServerToClient => {
                    let Some(requests) = step.msg["result"]["inputRequests"].as_object() else { continue };
                    for (key, request) in requests {
                        let Some(method) = request["method"].as_str() else { continue };
                        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
                        asked.insert(key.clone(), (method.to_owned(), params));
                    }
                }
                Dir::ClientToServer => {
                    let Some(responses) = step.msg["params"]["inputResponses"].as_object() else { continue };
                    for (key, response) in responses {
                        if let Some((method, params)) = asked.remove(key) {
                            entries.push((method, params, Ok(response.clone()), false));
                        }
                    }
                }
            }
        }
        for (n, (dir, step)) in all.iter().enumerate() {
            let (Dir::ServerToClient, Some(method), Some(id)) = (dir, step.msg["method"].as_str(), step.msg.get("id"))
            else {
                continue;
            };
            let answer = all[n + 1..].iter().find(|(d, s)| {
                *d == Dir::ClientToServer && s.msg.get("method").is_none() && s.msg.get("id") == Some(id)
            });
            if let Some((_, answer)) = answer {
                let outcome = match answer.msg.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(answer.msg["result"].clone()),
                };
                let params = step.msg.get("params").cloned().unwrap_or_else(|| json!({}));
                entries.push((method.to_owned(), params, outcome, false));
            }
        }
        Answers { entries: Mutex::new(entries) }
    }

    /// The recorded answer to `method` with `params`, decoded into `R`.
    fn answer<R: DeserializeOwned>(&self, method: &str, params: impl Serialize) -> Result<R, ErrorObject> {
        let params = serde_json::to_value(params).unwrap_or_default();
        let mut entries = self.entries.lock().expect("never poisoned");
        let unused = |e: &Answer| !e.3 && e.0 == method;
        let index = entries.iter().position(|e| unused(e) && e.1 == params).or_else(|| entries.iter().position(unused));
        let Some(index) = index else {
            return Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("no recorded answer left for {method}")));
        };
        entries[index].3 = true;
        let invalid =
            |e: serde_json::Error| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("recorded answer: {e}"));
        match entries[index].2.clone() {
            Ok(result) => serde_json::from_value(result).map_err(invalid),
            Err(error) => Err(serde_json::from_value(error).map_err(invalid)?),
        }
    }
}

/// Handlers for what the recorded client declared (`sampling`, `elicitation` in the recorded
/// modes, `roots` with the roots it answered), answering with its recorded answers.
fn recorded_handlers(mut options: ClientOptions, capabilities: &Value, all: &[(Dir, Step)]) -> ClientOptions {
    let answers = Arc::new(Answers::from_recording(all));
    if capabilities.get("sampling").is_some() {
        let answers = answers.clone();
        options = options.with_sampling(move |params: CreateMessageRequestParams| {
            let answer = answers.answer::<CreateMessageResult>(CreateMessage::NAME, params);
            async move { answer }
        });
    }
    if let Some(elicitation) = capabilities.get("elicitation") {
        let mut modes =
            ElicitationModes { form: elicitation.get("form").is_some(), url: elicitation.get("url").is_some() };
        if !modes.form && !modes.url {
            modes = ElicitationModes::FORM;
        }
        let answers = answers.clone();
        options = options.with_elicitation_modes(
            move |params: ElicitRequestParams| {
                let answer = answers.answer::<ElicitResult>(Elicit::NAME, params);
                async move { answer }
            },
            modes,
        );
    }
    if capabilities.get("roots").is_some() {
        // Roots are a list the client holds, not a handler: the first recorded answer's.
        let roots = answers
            .entries
            .lock()
            .expect("never poisoned")
            .iter()
            .find(|e| e.0 == ListRoots::NAME)
            .and_then(|e| e.2.as_ref().ok())
            .and_then(|r| serde_json::from_value::<ListRootsResult>(r.clone()).ok())
            .map(|r| r.roots)
            .unwrap_or_default();
        options = options.with_roots(roots);
    }
    options
}

/// `Client::request::<M>` for the method type named `method`.
async fn dispatch<T: Transport>(client: Client<T>, method: String, params: Value) -> Result<Outcome, NotSent> {
    macro_rules! table {
        ($($ty:ty),* $(,)?) => {
            $(if method == <$ty as Method>::NAME {
                return call::<$ty, T>(&client, params).await;
            })*
        };
    }
    if method == SubscriptionsListen::NAME {
        return listen(&client, params).await;
    }
    table!(
        Ping,
        ListTools,
        CallTool,
        ListPrompts,
        GetPrompt,
        ListResources,
        ListResourceTemplates,
        ReadResource,
        Subscribe,
        Unsubscribe,
        Complete,
        SetLevel,
        GetTask,
        GetTaskPayload,
        ListTasks,
        CancelTask,
        UnknownMethod,
    );
    Err(NotSent(format!("no method type for {method} in the driver's table")))
}

/// `subscriptions/listen` through [`Client::listen`]: the stream stays open until the server
/// ends it or the call is dropped (a recorded `notifications/cancelled`, or the end of the
/// recording, where the recorded client let go of it).
async fn listen<T: Transport>(client: &Client<T>, params: Value) -> Result<Outcome, NotSent> {
    let params: SubscriptionsListenRequestParams = serde_json::from_value(params)
        .map_err(|e| NotSent(format!("params do not fit SubscriptionsListenRequestParams: {e}")))?;
    let listening = match client.listen(params.notifications).await {
        Ok(listening) => listening,
        Err(e) => return Ok(Err(e.to_string())),
    };
    Ok(match listening.ended().await {
        Ok(result) => serde_json::to_value(result).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    })
}

fn usage() -> ExitCode {
    eprintln!("usage: mcp-conformance-client-driver [--fixtures DIR] RECORDING (SERVER_CMD ARGS... | URL)");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut fixtures = None;
    if args.first().map(String::as_str) == Some("--fixtures") && args.len() > 1 {
        fixtures = Some(args[1].clone());
        args.drain(..2);
    }
    if args.len() < 2 {
        return usage();
    }
    let path = PathBuf::from(&args[0]);
    let server = args[1..].to_vec();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(drive(path, fixtures, server))
}

struct Step {
    seq: u64,
    t_ms: u64,
    msg: Value,
    raw: String,
}

async fn drive(path: PathBuf, fixtures: Option<String>, server: Vec<String>) -> ExitCode {
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mcp-conformance-client-driver: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let text = match &fixtures {
        Some(dir) => text.replace(FIXTURES_RECORDED, dir),
        None => text,
    };
    let recording = match Recording::parse(&path, &text) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp-conformance-client-driver: {e}");
            return ExitCode::from(2);
        }
    };
    // What the recorded server refused at the HTTP level: hand-made requests no API client sends.
    let rejected = rejected_at_http_level(&recording);
    for entry in &recording.entries {
        if entry.dir == Dir::ClientToServer && entry.msg.is_some() && rejected.contains(&entry.seq) {
            let status = entry.http.as_ref().and_then(|h| h.get("status")).cloned().unwrap_or_default();
            eprintln!(
                "mcp-conformance-client-driver: not issued: seq {}: refused by the recorded server at the HTTP level \
                 ({status}) before any session saw it; a hand-made request no client API makes",
                entry.seq
            );
        }
    }
    let all: Vec<(Dir, Step)> = recording
        .entries
        .iter()
        .filter(|e| !rejected.contains(&e.seq))
        .filter_map(|e| {
            let raw = e.msg.as_ref()?.get().to_owned();
            let msg = serde_json::from_str(&raw).ok()?;
            Some((e.dir, Step { seq: e.seq, t_ms: e.t_ms, msg, raw }))
        })
        .collect();
    let mut not_sent = Vec::new();

    // The handshake, from the recorded initialize, after a server/discover probe if one was
    // recorded first (the Python SDK's mode='auto'); a 2026-07-28 session has only the probe.
    let first = all.iter().find(|(d, s)| *d == Dir::ClientToServer && s.msg.get("method").is_some());
    let discover = first.filter(|(_, s)| s.msg["method"] == "server/discover").map(|(_, s)| s);
    let init = all.iter().find(|(d, s)| *d == Dir::ClientToServer && s.msg["method"] == "initialize").map(|(_, s)| s);
    let mut options = ClientOptions::default();
    let (seq, client_info, capabilities) = match (init, discover) {
        (Some(init), _) => (init.seq, &init.msg["params"]["clientInfo"], &init.msg["params"]["capabilities"]),
        (None, Some(probe)) => {
            let meta = &probe.msg["params"]["_meta"];
            (
                probe.seq,
                &meta["io.modelcontextprotocol/clientInfo"],
                &meta["io.modelcontextprotocol/clientCapabilities"],
            )
        }
        (None, None) => {
            eprintln!("mcp-conformance-client-driver: the recording has neither initialize nor server/discover");
            return ExitCode::from(3);
        }
    };
    match serde_json::from_value::<Implementation>(client_info.clone()) {
        Ok(info) => options.client_info = info,
        Err(e) => not_sent.push(format!("seq {seq}: clientInfo does not fit Implementation: {e}")),
    }
    match serde_json::from_value::<ClientCapabilities>(capabilities.clone()) {
        Ok(caps) => options.capabilities = caps,
        Err(e) => not_sent.push(format!("seq {seq}: capabilities do not fit ClientCapabilities: {e}")),
    }
    if let Some(init) = init {
        let offered = init.msg["params"]["protocolVersion"].as_str().unwrap_or_default();
        match offered.parse::<ProtocolVersion>() {
            Ok(v) => options.protocol_version = v,
            // A version we do not know, offered as written (negotiation with a newer client).
            Err(_) => options = options.with_offered_version_str(offered),
        }
    }
    // The era as recorded: a probe first (`auto`), or the handshake alone (`legacy`).
    options = options.with_discover_first(discover.is_some());
    options = recorded_handlers(options, capabilities, &all);
    options.request_timeout = Some(Duration::from_secs(30));
    let is_url = server.len() == 1 && (server[0].starts_with("http://") || server[0].starts_with("https://"));
    if is_url {
        {
            let config = HttpClientConfig::new(&server[0]).legacy(recording.header.transport == "sse");
            let transport = match HttpClientTransport::new(config) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("mcp-conformance-client-driver: {}: {e}", server[0]);
                    return ExitCode::from(2);
                }
            };
            return match Client::connect(transport, options).await {
                Ok(client) => run(client, &all, not_sent).await,
                Err(e) => {
                    eprintln!("mcp-conformance-client-driver: connecting to {}: {e}", server[0]);
                    ExitCode::from(1)
                }
            };
        }
    }
    let command = ChildCommand::new(&server[0]).args(&server[1..]);
    match Client::spawn(command, options).await {
        Ok(client) => run(client, &all, not_sent).await,
        Err(e) => {
            eprintln!("mcp-conformance-client-driver: connecting: {e}");
            ExitCode::from(1)
        }
    }
}

/// Issues the recorded client messages but the handshake through `client`, in order; then
/// prints the outcomes and closes the connection.
async fn run<T: Transport>(client: Client<T>, all: &[(Dir, Step)], mut not_sent: Vec<String>) -> ExitCode {
    // The driver's own messages: requests, notifications and batches but initialize/initialized.
    let ours: Vec<&Step> = all
        .iter()
        .filter(|(d, s)| {
            *d == Dir::ClientToServer
                && (s.msg.get("method").is_some() || s.msg.is_array())
                && !matches!(
                    s.msg["method"].as_str(),
                    Some("initialize" | "notifications/initialized" | "server/discover")
                )
                // A 2026-07-28 retry of an `input_required` request: our client's loop sends it.
                && s.msg["params"].get("inputResponses").is_none()
                && s.msg["params"].get("requestState").is_none()
        })
        .map(|(_, s)| s)
        .collect();
    let position = |seq: u64| all.iter().position(|(_, s)| s.seq == seq).unwrap_or(usize::MAX);
    let mut pending: HashMap<String, (u64, String, Call)> = HashMap::new();
    let mut outcomes: Vec<(u64, String, Result<Outcome, NotSent>)> = Vec::new();
    let mut previous_t: Option<u64> = None;
    for (n, step) in ours.iter().enumerate() {
        // After a call left running, keep the recorded pace (capped) so it is under way first.
        if let (Some(t), false) = (previous_t, pending.is_empty()) {
            tokio::time::sleep(Duration::from_millis(step.t_ms.saturating_sub(t).min(1000))).await;
        }
        previous_t = Some(step.t_ms);
        let here = position(step.seq);
        let next = ours.get(n + 1).map(|s| position(s.seq) - here);
        // A batch is issued as its messages, all at once.
        let messages: Vec<(Value, String)> = match &step.msg {
            Value::Array(batch) => batch.iter().map(|m| (m.clone(), m.to_string())).collect(),
            msg => vec![(msg.clone(), step.raw.clone())],
        };
        let mut awaited = Vec::new();
        for (msg, raw) in messages {
            let method = msg["method"].as_str().unwrap_or_default().to_owned();
            match msg.get("id") {
                Some(id) => {
                    let params = msg.get("params").cloned().unwrap_or_else(|| serde_json::json!({}));
                    let task = tokio::spawn(dispatch(client.clone(), method.clone(), params));
                    // Await it now if its response was recorded before our next message.
                    let response = all[here..].iter().position(|(d, s)| {
                        *d == Dir::ServerToClient && s.msg.get("method").is_none() && s.msg.get("id") == Some(id)
                    });
                    if response.is_some_and(|r| next.is_none_or(|next| r < next)) {
                        awaited.push((step.seq, method, task));
                    } else {
                        pending.insert(id.to_string(), (step.seq, method, task));
                    }
                }
                None if method == "notifications/cancelled" => {
                    let request = msg["params"]["requestId"].to_string();
                    match pending.remove(&request) {
                        // Dropping the call's future is how our client cancels.
                        Some((seq, method, task)) => {
                            task.abort();
                            outcomes.push((seq, method, Ok(Err("cancelled".into()))));
                        }
                        None => not_sent.push(format!("seq {}: cancels request {request}, not in flight", step.seq)),
                    }
                }
                None => match Message::from_str(&raw) {
                    // No typed notification API on Client: sent as recorded.
                    Ok(message) => {
                        if let Err(e) = client.transport().send(message).await {
                            not_sent.push(format!("seq {}: {method}: {e}", step.seq));
                        }
                    }
                    Err(e) => not_sent.push(format!("seq {}: {method}: {e}", step.seq)),
                },
            }
        }
        for (seq, method, task) in awaited {
            let outcome = task.await.unwrap_or_else(|e| Err(NotSent(e.to_string())));
            outcomes.push((seq, method, outcome));
        }
    }
    for (_, (seq, method, task)) in pending {
        if method == SubscriptionsListen::NAME {
            // Left open by the recorded client: let go of it, as it did.
            task.abort();
            outcomes.push((seq, method, Ok(Err("left open to the end".into()))));
            continue;
        }
        let outcome = match tokio::time::timeout(Duration::from_secs(30), task).await {
            Ok(joined) => joined.unwrap_or_else(|e| Err(NotSent(e.to_string()))),
            Err(_) => Ok(Err("no response within 30 s".into())),
        };
        outcomes.push((seq, method, outcome));
    }
    outcomes.sort_by_key(|(seq, _, _)| *seq);
    for (seq, method, outcome) in outcomes {
        let line = match outcome {
            Ok(Ok(result)) => serde_json::json!({"seq": seq, "method": method, "result": result}),
            Ok(Err(error)) => serde_json::json!({"seq": seq, "method": method, "error": error}),
            Err(NotSent(why)) => {
                not_sent.push(format!("seq {seq}: {method}: {why}"));
                continue;
            }
        };
        println!("{line}");
    }
    // Server requests recorded after our last message are answered by the client on its own.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = client.close().await;
    for why in &not_sent {
        eprintln!("mcp-conformance-client-driver: not sent: {why}");
    }
    if not_sent.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    }
}
