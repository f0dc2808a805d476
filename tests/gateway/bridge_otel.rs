//! `mcp-bridge serve --otlp-endpoint` (features `otel`, `mcp-bridge/otel`): a downstream call
//! and the upstream call it causes are one trace, exported over OTLP/HTTP protobuf to a
//! receiver in this test, in both eras; a sampling request an upstream makes during a call is
//! in that call's trace; an unreachable collector costs no call; and across implementations, a
//! Python SDK client → the bridge → a Python SDK server, each process exporting to the same
//! receiver, are one trace; the four MCP duration histograms reach the receiver over OTLP with
//! the conventions' names, unit, boundaries and attributes.
//!
//! The downstream client is ours and sends `_meta.traceparent` itself (as an instrumented
//! client would); the upstream is our server in this process, whose `meta` tool answers with
//! the `_meta` it received, so the context the bridge injected can be compared with the spans
//! it exported. This process installs no OpenTelemetry layer: that upstream propagates no
//! context of its own (the sampling it asks for is an uninstrumented upstream's). The Python
//! peers (tests/peers/py_otel_*.py) are traced by the SDK's own instrumentation (mcp 2.3.0,
//! `MCP_PYTHON_OTEL`) and by OpenLLMetry's `opentelemetry-instrumentation-mcp` (mcp 1.30.0,
//! `MCP_PYTHON_OPENLLMETRY`), exported by the OpenTelemetry Python SDK.

use crate::examples;
use crate::serving::{children_of, ServingBridge};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use mcpwire::client::{CallOptions, Client, ClientOptions, EraPolicy};
use mcpwire::proto::mcp_types::{CreateMessageRequestParams, CreateMessageResult};
use mcpwire::proto::version::ProtocolVersion;
use mcpwire::transport::sse_http::{HttpClientConfig, HttpClientTransport, HttpServer, HttpServerConfig};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data as MetricData;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{json, Value};

/// A span as received, with its resource's `service.name`.
#[derive(Clone, Debug)]
struct Received {
    service: Option<String>,
    span: Span,
}

/// An OTLP/HTTP receiver on loopback: `POST /v1/traces` with a protobuf
/// `ExportTraceServiceRequest` and `POST /v1/metrics` with an `ExportMetricsServiceRequest`,
/// answered 200; every span and every histogram point kept.
struct Collector {
    url: String,
    received: Arc<Store>,
}

/// What a collector received, and a condition variable woken at each export.
#[derive(Default)]
struct Store {
    spans: Mutex<Vec<Received>>,
    points: Mutex<Vec<Point>>,
    changed: Condvar,
}

/// A histogram point as exported: its metric's name and unit, its attributes as sorted
/// `key=value` strings, its count and its bucket bounds.
#[derive(Clone, Debug, PartialEq)]
struct Point {
    metric: String,
    unit: String,
    attributes: Vec<String>,
    count: u64,
    bounds: Vec<f64>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received: Arc<Store> = Arc::default();
        let store = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let store = store.clone();
                std::thread::spawn(move || serve_exports(stream, &store));
            }
        });
        Collector { url, received }
    }

    /// The spans received so far once `enough` holds of them (within a generous bound, for a
    /// slow machine: the bridge flushes what it queued when it stops).
    fn spans_when(&self, enough: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut spans = self.received.spans.lock().unwrap();
        while !enough(&spans) {
            let left = deadline.checked_duration_since(Instant::now()).expect("the spans arrive within 60 s");
            spans = self.received.changed.wait_timeout(spans, left).unwrap().0;
        }
        spans.clone()
    }

    /// The histogram points received so far (from every export: cumulative counts, so a
    /// later export repeats a series with its count so far) once `enough` holds of them
    /// (within 60 s).
    fn points_when(&self, enough: impl Fn(&[Point]) -> bool) -> Vec<Point> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut points = self.received.points.lock().unwrap();
        while !enough(&points) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                panic!("the metrics did not arrive within 60 s: {points:#?}");
            };
            points = self.received.changed.wait_timeout(points, left).unwrap().0;
        }
        points.clone()
    }
}

/// The histogram points of a metrics export.
fn points_of(export: ExportMetricsServiceRequest) -> Vec<Point> {
    let mut points = Vec::new();
    for metric in export.resource_metrics.into_iter().flat_map(|r| r.scope_metrics).flat_map(|s| s.metrics) {
        let Some(MetricData::Histogram(histogram)) = metric.data else { continue };
        for point in histogram.data_points {
            let mut attributes: Vec<String> =
                point.attributes.iter().map(|kv| format!("{}={}", kv.key, string_of(kv).unwrap_or_default())).collect();
            attributes.sort();
            points.push(Point {
                metric: metric.name.clone(),
                unit: metric.unit.clone(),
                attributes,
                count: point.count,
                bounds: point.explicit_bounds,
            });
        }
    }
    points
}

fn serve_exports(stream: TcpStream, store: &Store) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        if request_line.starts_with("POST /v1/metrics ") {
            let export = ExportMetricsServiceRequest::decode(body.as_slice()).expect("an OTLP protobuf export");
            store.points.lock().unwrap().extend(points_of(export));
            store.changed.notify_all();
            let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
            writer.write_all(answer.as_bytes()).unwrap();
            continue;
        }
        assert!(request_line.starts_with("POST /v1/traces "), "{request_line}");
        let export = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP protobuf export");
        let mut spans = Vec::new();
        for resource_spans in export.resource_spans {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(string_of);
            for scope in resource_spans.scope_spans {
                spans.extend(scope.spans.into_iter().map(|span| Received { service: service.clone(), span }));
            }
        }
        store.spans.lock().unwrap().extend(spans);
        store.changed.notify_all();
        let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        writer.write_all(answer.as_bytes()).unwrap();
    }
}

fn string_of(kv: &KeyValue) -> Option<String> {
    match kv.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        other => Some(format!("{other:?}")),
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(string_of)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Our server over Streamable HTTP in this process: `meta` answers with the `_meta` its
/// request carried; `fail` answers with a tool error.
async fn upstream() -> HttpServer {
    use mcpwire::server::{text_result, Server};
    Server::builder()
        .name("upstream")
        .tool("meta", "the request's _meta", json!({"type": "object"}), |_args, ctx| {
            let meta = serde_json::to_string(&ctx.meta()).unwrap();
            async move { Ok(text_result(meta)) }
        })
        .tool(
            "ask",
            "asks the client's model, answers with its text",
            json!({"type": "object"}),
            |_args, ctx| async move {
                let params: CreateMessageRequestParams = serde_json::from_value(
                    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}),
                )
                .unwrap();
                let sampled = ctx.create_message(params).await?;
                Ok(text_result(serde_json::to_value(&sampled.content).unwrap()["text"].as_str().unwrap_or_default()))
            },
        )
        .tool("fail", "a tool error", json!({"type": "object"}), |_args, _ctx| async {
            let mut result = text_result("it failed");
            result.is_error = Some(true);
            Ok(result)
        })
        .build()
        .unwrap()
        .serve_http(HttpServerConfig::default())
        .await
        .unwrap()
}

fn bridge_to(upstream: &HttpServer, name: &str, otlp: &str) -> ServingBridge {
    let dir = std::env::temp_dir().join(format!("mcpwire-otel-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(&config, format!("[mcp_servers.up]\nurl = {:?}\n", upstream.url())).unwrap();
    ServingBridge::start_with(&["--config", config.to_str().unwrap(), "--otlp-endpoint", otlp], |command| {
        command.env("OTEL_BSP_SCHEDULE_DELAY", "100").env_remove("OTEL_SERVICE_NAME").env_remove("OTEL_SDK_DISABLED");
    })
}

async fn client(url: &str, era: EraPolicy) -> Client<HttpClientTransport> {
    let transport = HttpClientTransport::new(HttpClientConfig::new(url)).unwrap();
    Client::connect(transport, ClientOptions::default().with_era(era)).await.unwrap()
}

fn text(result: &mcpwire::proto::mcp_types::CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned()
}

/// One era's calls through the bridge, and what they must have exported.
async fn one_trace_per_call(era: EraPolicy, version: &str, trace: &str) {
    let collector = Collector::start();
    let upstream = upstream().await;
    let mut bridge = bridge_to(&upstream, version, &collector.url);
    let downstream = client(&bridge.url, era).await;
    let parent = "00f067aa0ba902b7";
    let with_parent =
        |trace: &str| CallOptions::default().with_meta("traceparent", json!(format!("00-{trace}-{parent}-01")));

    let seen = downstream.call_tool("mcp__up__meta", None, with_parent(trace)).await.unwrap();
    let upstream_meta: Value = serde_json::from_str(&text(&seen)).unwrap();
    let injected = upstream_meta["traceparent"].as_str().unwrap_or_else(|| panic!("no traceparent: {upstream_meta}"));
    let fields: Vec<&str> = injected.split('-').collect();
    assert_eq!((fields[0], fields[1], fields[3]), ("00", trace, "01"), "{injected}");
    assert_ne!(fields[2], parent, "the upstream's parent is the bridge's client span, not our span");

    let failing_trace = format!("{}{}", &trace[..31], "f");
    let failed = downstream.call_tool("mcp__up__fail", None, with_parent(&failing_trace)).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    let _ = downstream.close().await;
    bridge.stop();

    let in_trace = |spans: &[Received], trace: &str| -> Vec<Received> {
        spans.iter().filter(|r| hex(&r.span.trace_id) == trace).cloned().collect()
    };
    let spans =
        collector.spans_when(|spans| in_trace(spans, trace).len() >= 2 && in_trace(spans, &failing_trace).len() >= 2);
    let call = in_trace(&spans, trace);
    let server = call.iter().find(|r| r.span.kind == SpanKind::Server as i32).expect("the bridge's server span");
    let client = call.iter().find(|r| r.span.kind == SpanKind::Client as i32).expect("the bridge's client span");
    assert_eq!(call.len(), 2, "{call:#?}");

    // One trace: our span → the bridge's server span → its client span → the upstream.
    assert_eq!(hex(&server.span.parent_span_id), parent);
    assert_eq!(hex(&client.span.parent_span_id), hex(&server.span.span_id));
    assert_eq!(hex(&client.span.span_id), fields[2], "the context injected upstream is the client span's");
    assert_eq!(server.service.as_deref(), Some("mcp-bridge"));

    assert_eq!(server.span.name, "tools/call mcp__up__meta");
    assert_eq!(attribute(&server.span, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(&server.span, "gen_ai.tool.name").as_deref(), Some("mcp__up__meta"));
    assert_eq!(attribute(&server.span, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(attribute(&server.span, "network.transport").as_deref(), Some("tcp"));
    assert_eq!(attribute(&server.span, "mcp.protocol.version").as_deref(), Some(version));
    assert!(attribute(&server.span, "jsonrpc.request.id").is_some(), "{server:#?}");
    assert_eq!(attribute(&server.span, "error.type"), None);
    if version != "2026-07-28" {
        assert!(attribute(&server.span, "mcp.session.id").is_some_and(|s| !s.is_empty()), "{server:#?}");
    }

    assert_eq!(client.span.name, "tools/call meta");
    assert_eq!(attribute(&client.span, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(&client.span, "gen_ai.tool.name").as_deref(), Some("meta"));
    assert_eq!(attribute(&client.span, "network.transport").as_deref(), Some("tcp"));
    assert!(attribute(&client.span, "mcp.protocol.version").is_some(), "{client:#?}");
    assert!(attribute(&client.span, "jsonrpc.request.id").is_some(), "{client:#?}");
    let upstream_port = upstream.url().rsplit_once(':').unwrap().1.split('/').next().unwrap().to_owned();
    assert_eq!(attribute(&client.span, "server.address").as_deref(), Some("127.0.0.1"), "{client:#?}");
    assert_eq!(attribute(&client.span, "server.port"), Some(upstream_port));

    // A tool error is an error of both spans, typed `tool_error`.
    let failing = in_trace(&spans, &failing_trace);
    assert_eq!(failing.len(), 2, "{failing:#?}");
    for received in &failing {
        assert_eq!(attribute(&received.span, "error.type").as_deref(), Some("tool_error"), "{received:#?}");
        let status = received.span.status.as_ref().expect("a status");
        assert_eq!(status.code, 2, "STATUS_CODE_ERROR: {received:#?}");
    }
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_era_call_and_its_upstream_call_are_one_trace() {
    one_trace_per_call(EraPolicy::Legacy, "2025-11-25", "4bf92f3577b34da6a3ce929d0e0e4736").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_call_and_its_upstream_call_are_one_trace() {
    one_trace_per_call(
        EraPolicy::Adopt(ProtocolVersion::V2026_07_28),
        "2026-07-28",
        "5bf92f3577b34da6a3ce929d0e0e4736",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_costs_no_call() {
    let upstream = upstream().await;
    let bridge = bridge_to(&upstream, "unreachable", "http://127.0.0.1:1");
    let downstream = client(&bridge.url, EraPolicy::Legacy).await;
    for i in 0..50 {
        let trace = format!("{i:032x}").replacen('0', "a", 1);
        let options = CallOptions::default().with_meta("traceparent", json!(format!("00-{trace}-00f067aa0ba902b7-01")));
        let seen = downstream.call_tool("mcp__up__meta", None, options).await.unwrap();
        assert_ne!(seen.is_error, Some(true), "{seen:?}");
    }
    // The spans of a failed export are counted (the batches go out every 100 ms).
    dropped_until(&bridge, "export_failed", |n| n > 0);
    let _ = downstream.close().await;
    drop(bridge);
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_durations_are_exported_as_otlp_histograms() {
    let collector = Collector::start();
    let upstream = upstream().await;
    let dir = std::env::temp_dir().join(format!("mcpwire-otel-{}-metrics", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    let prompts = examples::example_path("prompts");
    let toml =
        format!("[mcp_servers.up]\nurl = {:?}\n\n[mcp_servers.prompts]\ncommand = {prompts:?}\n", upstream.url());
    std::fs::write(&config, toml).unwrap();
    // Metrics alone (no traces), exported every 100 ms, cumulative (the SDK's default).
    let bridge =
        ServingBridge::start_with(&["--config", config.to_str().unwrap(), "--otlp-endpoint", &collector.url], |c| {
            c.env("OTEL_METRIC_EXPORT_INTERVAL", "100")
                .env("OTEL_TRACES_EXPORTER", "none")
                .env_remove("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE")
                .env_remove("OTEL_SERVICE_NAME")
                .env_remove("OTEL_SDK_DISABLED");
        });
    let downstream = client(&bridge.url, EraPolicy::Legacy).await;
    downstream.call_tool("mcp__up__meta", None, CallOptions::default()).await.unwrap();
    let failed = downstream.call_tool("mcp__up__fail", None, CallOptions::default()).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    let language = [("language".to_owned(), "rust".to_owned())].into_iter().collect();
    downstream.get_prompt("mcp__prompts__review", Some(language)).await.unwrap();
    downstream.get_prompt("mcp__prompts__review", None).await.expect_err("a required argument missing");
    let _ = downstream.close().await;
    // The stdio upstream exits: the bridge's session to it ends, not by the bridge's doing.
    let child: Vec<u32> = children_of(bridge.pid())
        .into_iter()
        .filter(|(_, cmd)| cmd.contains("examples/prompts"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(child.len(), 1, "{child:?}");
    let _ = std::process::Command::new("kill").args(["-KILL", &child[0].to_string()]).status();

    let attributes = |list: &[&str]| -> Vec<String> {
        let mut list: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
        list.sort();
        list
    };
    let tool = |name: &'static str| vec!["mcp.method.name=tools/call", "gen_ai.operation.name=execute_tool", name];
    let prompt = |name: &'static str| vec!["mcp.method.name=prompts/get", name];
    let mut expected: Vec<(&str, Vec<String>)> = Vec::new();
    for (side, meta, fail, review) in [
        (
            "server",
            "gen_ai.tool.name=mcp__up__meta",
            "gen_ai.tool.name=mcp__up__fail",
            "gen_ai.prompt.name=mcp__prompts__review",
        ),
        ("client", "gen_ai.tool.name=meta", "gen_ai.tool.name=fail", "gen_ai.prompt.name=review"),
    ] {
        let metric = if side == "server" { "mcp.server.operation.duration" } else { "mcp.client.operation.duration" };
        expected.push((metric, attributes(&tool(meta))));
        expected.push((metric, attributes(&[tool(fail), vec!["error.type=tool_error"]].concat())));
        expected.push((metric, attributes(&prompt(review))));
        let refused = [prompt(review), vec!["error.type=-32602", "rpc.response.status_code=-32602"]].concat();
        expected.push((metric, attributes(&refused)));
    }
    expected.push(("mcp.server.session.duration", Vec::new()));
    expected.push(("mcp.client.session.duration", vec!["error.type=disconnected".to_owned()]));
    let found = |points: &[Point], (metric, attributes): &(&str, Vec<String>)| {
        points.iter().any(|p| p.metric == *metric && p.attributes == *attributes && p.count == 1)
    };
    let points = collector.points_when(|points| expected.iter().all(|e| found(points, e)));
    let bounds = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];
    for point in &points {
        assert!(point.metric.starts_with("mcp."), "only the MCP durations: {point:?}");
        assert_eq!(point.unit, "s", "{point:?}");
        assert_eq!(point.bounds, bounds, "the conventions' boundaries: {point:?}");
        assert!(point.count <= 1, "each series was observed once: {point:?}");
        let known =
            expected.iter().any(|(metric, attributes)| point.metric == *metric && point.attributes == *attributes);
        // The HTTP upstream's session is still open; nothing else was observed.
        assert!(known, "an unexpected series: {point:?}");
    }
    drop(bridge);
    upstream.shutdown().await;
}

/// `mcp_bridge_otel_spans_dropped_total{reason}` as the bridge's `/metrics` says it, polled
/// until `enough` holds of it (within 60 s).
fn dropped_until(bridge: &ServingBridge, reason: &str, enough: impl Fn(u64) -> bool) -> u64 {
    let line = format!("mcp_bridge_otel_spans_dropped_total{{reason=\"{reason}\"}} ");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, metrics) = crate::serving::http_get(&bridge.url, "/metrics", None);
        assert_eq!(status, 200, "{metrics}");
        let count = metrics
            .lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .unwrap_or_else(|| panic!("no {line}in {metrics}"))
            .trim()
            .parse()
            .unwrap();
        if enough(count) {
            return count;
        }
        assert!(Instant::now() < deadline, "{line}stays at {count}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A collector that accepts and never answers holds the exporter in its first export (its
/// timeout is ten minutes here); the spans past the queue's bound (4 here) are dropped and
/// counted, and no call waits for any of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_collector_costs_no_call_and_the_spans_it_drops_are_counted() {
    let stuck = TcpListener::bind("127.0.0.1:0").unwrap();
    let stuck_url = format!("http://{}", stuck.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    let holder = held.clone();
    std::thread::spawn(move || {
        for stream in stuck.incoming().flatten() {
            holder.lock().unwrap().push(stream);
        }
    });
    let upstream = upstream().await;
    let dir = std::env::temp_dir().join(format!("mcpwire-otel-{}-stuck", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(&config, format!("[mcp_servers.up]\nurl = {:?}\n", upstream.url())).unwrap();
    let bridge =
        ServingBridge::start_with(&["--config", config.to_str().unwrap(), "--otlp-endpoint", &stuck_url], |c| {
            c.env("OTEL_BSP_SCHEDULE_DELAY", "100")
                .env("OTEL_BSP_MAX_QUEUE_SIZE", "4")
                .env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
                .env("OTEL_EXPORTER_OTLP_TIMEOUT", "600000")
                .env_remove("OTEL_SDK_DISABLED");
        });
    let downstream = client(&bridge.url, EraPolicy::Legacy).await;
    for _ in 0..20 {
        let seen = downstream.call_tool("mcp__up__meta", None, CallOptions::default()).await.unwrap();
        assert_ne!(seen.is_error, Some(true), "{seen:?}");
    }
    // 40 spans: at most 4 in the export that hangs and 4 queued behind it.
    let dropped = dropped_until(&bridge, "queue_full", |n| n >= 32);
    assert!(dropped <= 40, "{dropped}");
    let _ = downstream.close().await;
    held.lock().unwrap().clear(); // the hanging export fails now, and the bridge stops at once
    drop(bridge);
    upstream.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_traceparent_header_is_continued_and_a_stdio_upstream_is_a_pipe() {
    let collector = Collector::start();
    let echo = crate::examples::example_path("echo_server");
    let mut bridge =
        ServingBridge::start_with(&["--otlp-endpoint", &collector.url, "--", echo.to_str().unwrap()], |c| {
            c.env("OTEL_BSP_SCHEDULE_DELAY", "100").env_remove("OTEL_SDK_DISABLED");
        });
    let trace = "6bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "10f067aa0ba902b7";
    let config = HttpClientConfig::new(&bridge.url).header("traceparent", format!("00-{trace}-{parent}-01"));
    let transport = HttpClientTransport::new(config).unwrap();
    let downstream = Client::connect(transport, ClientOptions::default().with_era(EraPolicy::Legacy)).await.unwrap();
    let tools = downstream.list_tools().await.unwrap();
    let echo_tool = tools.iter().find(|t| t.name.ends_with("echo")).expect("the echo tool").name.clone();
    let args = json!({"text": "hi"}).as_object().cloned();
    let echoed = downstream.call_tool(echo_tool.clone(), args, CallOptions::default()).await.unwrap();
    assert_eq!(text(&echoed), "hi");
    let _ = downstream.close().await;
    bridge.stop();

    let is_call = |r: &Received| hex(&r.span.trace_id) == trace && r.span.name.starts_with("tools/call");
    let spans = collector.spans_when(|spans| spans.iter().filter(|r| is_call(r)).count() >= 2);
    let call: Vec<&Received> = spans.iter().filter(|r| is_call(r)).collect();
    let server = call.iter().find(|r| r.span.kind == SpanKind::Server as i32).expect("the server span");
    let client = call.iter().find(|r| r.span.kind == SpanKind::Client as i32).expect("the client span");
    assert_eq!(hex(&server.span.parent_span_id), parent, "the header's context is the server span's parent");
    assert_eq!(server.span.name, format!("tools/call {echo_tool}"));
    assert_eq!(hex(&client.span.parent_span_id), hex(&server.span.span_id));
    assert_eq!(client.span.name, "tools/call echo");
    assert_eq!(attribute(&client.span, "network.transport").as_deref(), Some("pipe"));
    assert_eq!(attribute(&server.span, "network.transport").as_deref(), Some("tcp"));
}

/// A sampling request an upstream makes during a call, relayed to the downstream client, stays
/// in the call's trace although the upstream propagated nothing: the `_meta.traceparent` the
/// client receives is the bridge's client span of the relayed request, child of the bridge's
/// server span of the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampling_request_made_during_a_call_stays_in_its_trace() {
    let collector = Collector::start();
    let upstream = upstream().await;
    let mut bridge = bridge_to(&upstream, "sampling", &collector.url);
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = asked.clone();
    let options =
        ClientOptions::default().with_era(EraPolicy::Legacy).with_sampling(move |p: CreateMessageRequestParams| {
            seen.lock().unwrap().push(serde_json::to_value(&p.meta).unwrap());
            async {
                let answer = json!({"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"});
                Ok(serde_json::from_value::<CreateMessageResult>(answer).unwrap())
            }
        });
    let transport = HttpClientTransport::new(HttpClientConfig::new(&bridge.url)).unwrap();
    let downstream = Client::connect(transport, options).await.unwrap();
    let trace = "7bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "20f067aa0ba902b7";
    let call = CallOptions::default().with_meta("traceparent", json!(format!("00-{trace}-{parent}-01")));
    let answered = downstream.call_tool("mcp__up__ask", None, call).await.unwrap();
    assert_eq!(text(&answered), "sampled");
    let _ = downstream.close().await;
    bridge.stop();

    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let traceparent = asked[0]["traceparent"].as_str().unwrap_or_else(|| panic!("no traceparent: {asked:?}"));
    let fields: Vec<&str> = traceparent.split('-').collect();
    assert_eq!((fields[0], fields[1]), ("00", trace), "the sampling request is in the call's trace: {traceparent}");

    let in_trace = |spans: &[Received]| -> Vec<Received> {
        spans.iter().filter(|r| hex(&r.span.trace_id) == trace).cloned().collect()
    };
    let spans = collector.spans_when(|spans| in_trace(spans).len() >= 3);
    let spans = in_trace(&spans);
    let call_span = spans
        .iter()
        .find(|r| r.span.kind == SpanKind::Server as i32 && r.span.name == "tools/call mcp__up__ask")
        .unwrap_or_else(|| panic!("the call's server span: {spans:#?}"));
    assert_eq!(hex(&call_span.span.parent_span_id), parent);
    let relayed = spans
        .iter()
        .find(|r| hex(&r.span.span_id) == fields[2])
        .unwrap_or_else(|| panic!("the span of the traceparent the client got: {spans:#?}"));
    assert_eq!(relayed.span.kind, SpanKind::Client as i32, "{relayed:#?}");
    assert_eq!(relayed.span.name, "sampling/createMessage");
    assert_eq!(attribute(&relayed.span, "mcp.method.name").as_deref(), Some("sampling/createMessage"));
    assert_eq!(hex(&relayed.span.parent_span_id), hex(&call_span.span.span_id), "child of the call's span");
    upstream.shutdown().await;
}

/// tests/peers/py_otel_client.py → `mcp-bridge serve --otlp-endpoint` → py_otel_server.py over
/// stdio (upstream `py`), both run by the interpreter of `python_var` in peers.env (its venv
/// says who traces them) and exporting to one collector as `{service}-client` and
/// `{service}-server`; the client calls `mcp__py__echo {text: "across"}`. Returns the client's
/// JSON line (it checked the answer) and the collector.
fn python_call_through_the_bridge(python_var: &str, service: &str) -> (Value, Collector) {
    let collector = Collector::start();
    let python = crate::support::peer(python_var);
    let server = crate::support::repo_path("tests/peers/py_otel_server.py");
    let dir = std::env::temp_dir().join(format!("mcpwire-otel-{}-{service}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    let otel_env = format!(
        "env = {{ OTEL_EXPORTER_OTLP_ENDPOINT = {:?}, OTEL_SERVICE_NAME = \"{service}-server\" }}",
        collector.url
    );
    std::fs::write(&config, format!("[mcp_servers.py]\ncommand = {python:?}\nargs = [{server:?}]\n{otel_env}\n"))
        .unwrap();
    let mut bridge =
        ServingBridge::start_with(&["--config", config.to_str().unwrap(), "--otlp-endpoint", &collector.url], |c| {
            c.env("OTEL_BSP_SCHEDULE_DELAY", "100").env_remove("OTEL_SERVICE_NAME").env_remove("OTEL_SDK_DISABLED");
        });
    let client = crate::support::repo_path("tests/peers/py_otel_client.py");
    let output = std::process::Command::new(&python)
        .arg(&client)
        .args([&bridge.url, "mcp__py__echo", "across"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
        .env("OTEL_SERVICE_NAME", format!("{service}-client"))
        .env_remove("OTEL_SDK_DISABLED")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let line: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(line["text"], "across", "{line}");
    assert_eq!(line["is_error"], false, "{line}");
    bridge.stop();
    (line, collector)
}

/// The spans of `trace` that make `links` (service, kind, name), each the child of the one
/// before it; the first may have any parent. None until all of them have arrived.
fn chain_in(spans: &[Received], trace: &str, links: &[(&str, SpanKind, &str)]) -> Option<Vec<Received>> {
    let mut found: Vec<Received> = Vec::new();
    for (service, kind, name) in links {
        let parent = found.last().map(|r| r.span.span_id.clone());
        let next = spans.iter().find(|r| {
            hex(&r.span.trace_id) == trace
                && r.service.as_deref() == Some(*service)
                && r.span.kind == *kind as i32
                && r.span.name == *name
                && parent.as_ref().is_none_or(|p| &r.span.parent_span_id == p)
        })?;
        found.push(next.clone());
    }
    Some(found)
}

/// The spans of `links` in the client's trace, once all have arrived (each the child of the one
/// before), the first being the child of the client's root span.
fn python_chain(line: &Value, collector: &Collector, links: &[(&str, SpanKind, &str)]) -> Vec<Received> {
    let trace = line["trace_id"].as_str().unwrap();
    let spans = collector.spans_when(|spans| chain_in(spans, trace, links).is_some());
    let found = chain_in(&spans, trace, links).unwrap();
    let root = line["root_span_id"].as_str().unwrap();
    assert_eq!(hex(&found[0].span.parent_span_id), root, "the Python client's span is in its root span");
    found
}

/// The bridge's two spans of a call to `mcp__py__echo`, with the conventions' attributes.
fn assert_bridge_call_spans(bridge_server: &Span, bridge_client: &Span) {
    assert_eq!(attribute(bridge_server, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(bridge_server, "gen_ai.tool.name").as_deref(), Some("mcp__py__echo"));
    assert_eq!(attribute(bridge_server, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(attribute(bridge_server, "network.transport").as_deref(), Some("tcp"));
    assert!(attribute(bridge_server, "mcp.protocol.version").is_some(), "{bridge_server:#?}");
    assert!(attribute(bridge_server, "jsonrpc.request.id").is_some(), "{bridge_server:#?}");
    assert_eq!(attribute(bridge_client, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(attribute(bridge_client, "network.transport").as_deref(), Some("pipe"));
    assert!(attribute(bridge_client, "mcp.protocol.version").is_some(), "{bridge_client:#?}");
}

/// The Python SDK's client (mcp 2.3.0, its own instrumentation, exported by the OpenTelemetry
/// Python SDK) → `mcp-bridge serve` → the Python SDK's server over stdio (likewise): one trace
/// across the three processes, each span the child of the one before it, the bridge's spans
/// with the conventions' attributes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_client_the_bridge_and_a_python_server_are_one_trace() {
    let (line, collector) = python_call_through_the_bridge("MCP_PYTHON_OTEL", "py-otel");
    let found = python_chain(
        &line,
        &collector,
        &[
            ("py-otel-client", SpanKind::Client, "MCP send tools/call mcp__py__echo"),
            ("mcp-bridge", SpanKind::Server, "tools/call mcp__py__echo"),
            ("mcp-bridge", SpanKind::Client, "tools/call echo"),
            ("py-otel-server", SpanKind::Server, "tools/call echo"),
        ],
    );
    assert_bridge_call_spans(&found[1].span, &found[2].span);
    // The Python server's span, by the SDK's own instrumentation, carries the same conventions.
    assert_eq!(attribute(&found[3].span, "gen_ai.tool.name").as_deref(), Some("echo"));
}

/// The same across OpenLLMetry's `opentelemetry-instrumentation-mcp` (0.62.4) on both Python
/// sides, which instruments the Python SDK 1.x (mcp 1.30.0): its client's tool span, the span of
/// the request's write (whose context it puts in `_meta`), the bridge's server and client spans,
/// and the server's span of writing the answer, in that order, parent to child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openllmetry_instrumented_python_peers_and_the_bridge_are_one_trace() {
    let (line, collector) = python_call_through_the_bridge("MCP_PYTHON_OPENLLMETRY", "py-openllmetry");
    let found = python_chain(
        &line,
        &collector,
        &[
            ("py-openllmetry-client", SpanKind::Internal, "mcp__py__echo.tool"),
            ("py-openllmetry-client", SpanKind::Internal, "ResponseStreamWriter"),
            ("mcp-bridge", SpanKind::Server, "tools/call mcp__py__echo"),
            ("mcp-bridge", SpanKind::Client, "tools/call echo"),
            ("py-openllmetry-server", SpanKind::Internal, "ResponseStreamWriter"),
        ],
    );
    assert_bridge_call_spans(&found[2].span, &found[3].span);
}
