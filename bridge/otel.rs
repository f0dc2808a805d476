//! `serve`'s OpenTelemetry traces and metrics: the library's spans (target
//! `mcpwire::telemetry`, see `mcpwire::telemetry`) exported over OTLP/HTTP protobuf by the SDK's
//! batch span processor, and the MCP duration histograms (`mcp.server.operation.duration`,
//! `mcp.client.operation.duration`, `mcp.server.session.duration`,
//! `mcp.client.session.duration`, unit `s`, the conventions' bucket boundaries) by the SDK's
//! periodic reader.
//!
//! Configured the OpenTelemetry way: `--otlp-endpoint URL` (the collector's base URL, as
//! `OTEL_EXPORTER_OTLP_ENDPOINT`: `/v1/traces` and `/v1/metrics` are appended unless the path
//! already ends so), else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`; `OTEL_SERVICE_NAME`
//! and `OTEL_RESOURCE_ATTRIBUTES` (service name `mcp-bridge` when neither names one),
//! `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_*` (the queue's bound, 2048 spans
//! by default), `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds between metric exports, 60000 by
//! default as the SDK environment spec says), `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_TRACES_EXPORTER=none` / `OTEL_METRICS_EXPORTER=none` (one signal off),
//! `OTEL_SDK_DISABLED`. Off unless an endpoint is given. The processor exports from a thread of
//! its own: a call only queues its spans, a span that finds the queue full is dropped, so a slow
//! or unreachable collector never slows or fails a call. The spans not delivered are counted in
//! `/metrics` (`mcp_bridge_otel_spans_dropped_total`, by `reason`: `queue_full`,
//! `export_failed`): the SDK's processor counts its drops for itself only, so the bound is kept
//! here, in front of it (the spans it holds are counted from queued to handed to the exporter),
//! and the exporter is wrapped to count the spans of a failed export.
//!
//! The durations are those the gateway measures for its Prometheus histograms (`/metrics`):
//! each observation is recorded into both ([`mcpwire::gateway::metrics::bridge::DurationsSink`]),
//! with the attributes the conventions name (`mcp.method.name`, `gen_ai.tool.name`,
//! `gen_ai.prompt.name`, `gen_ai.operation.name = execute_tool` for a tool call, `error.type`,
//! `rpc.response.status_code` for a JSON-RPC error). Recording is in memory (the SDK's
//! aggregation); the reader collects and exports from a thread of its own, so a collector that
//! does not answer delays only the next export. Without an endpoint no sink is set and nothing
//! is recorded through OpenTelemetry.
//!
//! Without the `otel` feature the flag is refused and the variables are ignored (with a warning).
//!
//! Not here: logs over OTLP, gRPC, exemplars.

/// What `serve` was asked for: an endpoint from the flag, or whether the environment names one.
pub(crate) fn wanted(flag: Option<&str>) -> Option<Endpoint> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
    {
        return None;
    }
    match flag {
        Some(url) => Some(Endpoint::Flag(traces_url(url))),
        None if env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() => {
            Some(Endpoint::Environment)
        }
        None => None,
    }
}

#[cfg(feature = "otel")]
/// Where the metrics go, if anywhere: as [`wanted`] for spans, with `OTEL_METRICS_EXPORTER`
/// and `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`.
pub(crate) fn metrics_wanted(flag: Option<&str>) -> Option<Endpoint> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        || env("OTEL_METRICS_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"))
    {
        return None;
    }
    match flag {
        Some(url) => Some(Endpoint::Flag(signal_url(url, "metrics"))),
        None if env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT").is_some()
            || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some() =>
        {
            Some(Endpoint::Environment)
        }
        None => None,
    }
}

/// Where spans (or metrics) go.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Endpoint {
    /// `--otlp-endpoint`, as the full URL of the signal's path.
    Flag(String),
    /// The exporter reads `OTEL_EXPORTER_OTLP_*` itself.
    Environment,
}

/// `base` with `/v1/traces` appended, as the OTLP spec does with `OTEL_EXPORTER_OTLP_ENDPOINT`.
fn traces_url(base: &str) -> String {
    signal_url(base, "traces")
}

/// `base` with `/v1/{signal}` appended, unless its path ends so already.
fn signal_url(base: &str, signal: &str) -> String {
    let base = base.trim();
    if base.trim_end_matches('/').ends_with(&format!("/v1/{signal}")) {
        base.to_owned()
    } else {
        format!("{}/v1/{signal}", base.trim_end_matches('/'))
    }
}

#[cfg(feature = "otel")]
pub(crate) use enabled::{attach_durations, layer, meter_provider, render_metrics, Exporting};

/// Nothing to add to `/metrics` without the `otel` feature.
#[cfg(not(feature = "otel"))]
pub(crate) fn render_metrics(_out: &mut String) {}

/// No durations to export without the `otel` feature.
#[cfg(not(feature = "otel"))]
pub(crate) fn attach_durations(_metrics: &mcpwire::gateway::metrics::bridge::BridgeMetrics) {}

#[cfg(feature = "otel")]
mod enabled {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::{Arc, OnceLock};
    use std::time::Duration;

    use mcpwire::gateway::metrics::bridge::{
        BridgeMetrics, DurationsSink, Ended, Operation, Side, MCP_DURATION_BUCKETS,
    };
    use opentelemetry::metrics::{Histogram, Meter, MeterProvider as _};
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry::KeyValue;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
    use opentelemetry_sdk::trace::{
        BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter, SpanProcessor,
    };
    use opentelemetry_sdk::Resource;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::Layer;

    use super::Endpoint;

    /// The running exporters; dropping them flushes what is queued and exports the metrics a
    /// last time (each within the export timeout).
    pub(crate) struct Exporting {
        traces: Option<SdkTracerProvider>,
        metrics: Option<SdkMeterProvider>,
    }

    impl Exporting {
        pub(crate) fn new(traces: Option<SdkTracerProvider>, metrics: Option<SdkMeterProvider>) -> Exporting {
            Exporting { traces, metrics }
        }
    }

    impl Drop for Exporting {
        fn drop(&mut self) {
            if let Some(traces) = &self.traces {
                let _ = traces.shutdown();
            }
            if let Some(metrics) = &self.metrics {
                let _ = metrics.shutdown();
            }
        }
    }

    /// The resource of both signals: the environment's, named `mcp-bridge` unless it names the
    /// service itself.
    fn resource() -> Resource {
        let mut resource = Resource::builder();
        let names_service = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
            || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
        if !names_service {
            resource = resource.with_service_name("mcp-bridge");
        }
        resource.build()
    }

    /// The durations' sink, made by [`meter_provider`] and handed to the gateway's metrics by
    /// [`attach_durations`] once the gateway exists.
    static DURATIONS: OnceLock<Arc<OtelDurations>> = OnceLock::new();

    /// The meter provider exporting the MCP durations to `endpoint` every
    /// `OTEL_METRIC_EXPORT_INTERVAL` from a thread of its own. Must be called outside a tokio
    /// runtime (as [`layer`]).
    ///
    /// # Errors
    /// When the endpoint or the environment's settings do not make an exporter.
    pub(crate) fn meter_provider(endpoint: &Endpoint) -> Result<SdkMeterProvider, String> {
        let mut exporter =
            opentelemetry_otlp::MetricExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
        if let Endpoint::Flag(url) = endpoint {
            exporter = exporter.with_endpoint(url.clone());
        }
        let exporter = exporter.build().map_err(|e| format!("the OTLP metrics exporter: {e}"))?;
        // The interval from OTEL_METRIC_EXPORT_INTERVAL (60 s by default), read by the SDK.
        let reader = PeriodicReader::builder(exporter).build();
        let provider = SdkMeterProvider::builder().with_reader(reader).with_resource(resource()).build();
        let _ = DURATIONS.set(Arc::new(OtelDurations::new(&provider.meter("mcp-bridge"))));
        Ok(provider)
    }

    /// Records the gateway's durations through OpenTelemetry too, when [`meter_provider`] made
    /// a provider; nothing otherwise.
    pub(crate) fn attach_durations(metrics: &BridgeMetrics) {
        if let Some(durations) = DURATIONS.get() {
            metrics.set_durations_sink(durations.clone());
        }
    }

    /// The four histograms of the conventions.
    #[derive(Debug)]
    struct OtelDurations {
        server_operation: Histogram<f64>,
        client_operation: Histogram<f64>,
        server_session: Histogram<f64>,
        client_session: Histogram<f64>,
    }

    impl OtelDurations {
        fn new(meter: &Meter) -> OtelDurations {
            let histogram = |name: &'static str, description: &'static str| {
                meter
                    .f64_histogram(name)
                    .with_unit("s")
                    .with_description(description)
                    .with_boundaries(MCP_DURATION_BUCKETS.to_vec())
                    .build()
            };
            OtelDurations {
                server_operation: histogram(
                    "mcp.server.operation.duration",
                    "MCP request duration as observed on the receiver from the time it was received until the result or ack is sent.",
                ),
                client_operation: histogram(
                    "mcp.client.operation.duration",
                    "The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.",
                ),
                server_session: histogram(
                    "mcp.server.session.duration",
                    "The duration of the MCP session as observed on the MCP server.",
                ),
                client_session: histogram(
                    "mcp.client.session.duration",
                    "The duration of the MCP session as observed on the MCP client.",
                ),
            }
        }
    }

    impl DurationsSink for OtelDurations {
        fn operation(&self, side: Side, operation: Operation<'_>, elapsed: Duration) {
            let (tool, prompt) = operation.names();
            let mut attributes = Vec::with_capacity(5);
            attributes.push(KeyValue::new("mcp.method.name", operation.method.to_owned()));
            if !tool.is_empty() {
                attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
            }
            if operation.method == "tools/call" {
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
            if !prompt.is_empty() {
                attributes.push(KeyValue::new("gen_ai.prompt.name", prompt.to_owned()));
            }
            if operation.ended != Ended::Ok {
                attributes.push(KeyValue::new("error.type", operation.ended.error_type().into_owned()));
            }
            if let Ended::Error(code) = operation.ended {
                attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
            }
            let histogram = match side {
                Side::Server => &self.server_operation,
                Side::Client => &self.client_operation,
            };
            histogram.record(elapsed.as_secs_f64(), &attributes);
        }

        fn session(&self, side: Side, error_type: &str, elapsed: Duration) {
            let histogram = match side {
                Side::Server => &self.server_session,
                Side::Client => &self.client_session,
            };
            if error_type.is_empty() {
                histogram.record(elapsed.as_secs_f64(), &[]);
            } else {
                histogram.record(elapsed.as_secs_f64(), &[KeyValue::new("error.type", error_type.to_owned())]);
            }
        }
    }

    /// The layer that turns the library's spans into OpenTelemetry spans exported to
    /// `endpoint`, and the exporter to keep alive while serving. Must be called outside a
    /// tokio runtime (the exporter's blocking HTTP client has a runtime of its own).
    ///
    /// # Errors
    /// When the endpoint or the environment's settings do not make an exporter.
    pub(crate) fn layer<S>(endpoint: &Endpoint) -> Result<(impl Layer<S>, SdkTracerProvider), String>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
        if let Endpoint::Flag(url) = endpoint {
            exporter = exporter.with_endpoint(url.clone());
        }
        let exporter = exporter.build().map_err(|e| format!("the OTLP exporter: {e}"))?;
        let bound = queue_bound();
        let queued = Arc::new(AtomicUsize::new(0));
        let exporter = Counting { inner: exporter, queued: queued.clone() };
        let config = BatchConfigBuilder::default().with_max_queue_size(bound).build();
        let batch = BatchSpanProcessor::builder(exporter).with_batch_config(config).build();
        let processor = Bounded { inner: batch, queued, bound };
        let provider = SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource()).build();
        let tracer = provider.tracer("mcp-bridge");
        let only_ours = Targets::new().with_target(mcpwire::telemetry::TARGET, LevelFilter::DEBUG);
        let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(only_ours);
        Ok((layer, provider))
    }

    /// Spans dropped because the queue was full.
    static DROPPED_QUEUE_FULL: AtomicU64 = AtomicU64::new(0);
    /// Spans of exports that failed (the collector unreachable, or refusing them).
    static DROPPED_EXPORT_FAILED: AtomicU64 = AtomicU64::new(0);

    /// Appends the dropped-span counters to `/metrics`' Prometheus text.
    pub(crate) fn render_metrics(out: &mut String) {
        out.push_str(
            "# HELP mcp_bridge_otel_spans_dropped_total Spans not delivered to the OTLP collector, by why: \
             the export queue was full, or their export failed.\n\
             # TYPE mcp_bridge_otel_spans_dropped_total counter\n",
        );
        for (reason, count) in [("queue_full", &DROPPED_QUEUE_FULL), ("export_failed", &DROPPED_EXPORT_FAILED)] {
            out.push_str(&format!(
                "mcp_bridge_otel_spans_dropped_total{{reason=\"{reason}\"}} {}\n",
                count.load(Ordering::Relaxed)
            ));
        }
    }

    /// The queue's bound: `OTEL_BSP_MAX_QUEUE_SIZE`, 2048 by default (the SDK's default).
    fn queue_bound() -> usize {
        std::env::var("OTEL_BSP_MAX_QUEUE_SIZE")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or(2048)
    }

    /// The SDK's batch processor, with the queue's bound kept in front of it: a span ended
    /// while `bound` spans are queued (ended, not yet handed to the exporter) is dropped and
    /// counted. The SDK's own queue has the same bound and holds no more than that, so it
    /// never drops a span itself.
    #[derive(Debug)]
    struct Bounded {
        inner: BatchSpanProcessor,
        queued: Arc<AtomicUsize>,
        bound: usize,
    }

    impl SpanProcessor for Bounded {
        fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
            self.inner.on_start(span, cx);
        }

        fn on_end(&self, span: SpanData) {
            if self.queued.fetch_add(1, Ordering::AcqRel) >= self.bound {
                self.queued.fetch_sub(1, Ordering::AcqRel);
                DROPPED_QUEUE_FULL.fetch_add(1, Ordering::Relaxed);
                return;
            }
            self.inner.on_end(span);
        }

        fn force_flush(&self) -> OTelSdkResult {
            self.inner.force_flush()
        }

        fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
            self.inner.shutdown_with_timeout(timeout)
        }

        fn set_resource(&mut self, resource: &Resource) {
            self.inner.set_resource(resource);
        }
    }

    /// The exporter, telling [`Bounded`] which spans left the queue and counting those of a
    /// failed export.
    #[derive(Debug)]
    struct Counting<E> {
        inner: E,
        queued: Arc<AtomicUsize>,
    }

    impl<E: SpanExporter> SpanExporter for Counting<E> {
        fn export(&self, batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
            let spans = batch.len();
            self.queued.fetch_sub(spans, Ordering::AcqRel);
            let exported = self.inner.export(batch);
            async move {
                let result = exported.await;
                if result.is_err() {
                    DROPPED_EXPORT_FAILED.fetch_add(spans as u64, Ordering::Relaxed);
                }
                result
            }
        }

        fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
            self.inner.shutdown_with_timeout(timeout)
        }

        fn force_flush(&self) -> OTelSdkResult {
            self.inner.force_flush()
        }

        fn set_resource(&mut self, resource: &Resource) {
            self.inner.set_resource(resource);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_a_base_url_like_the_environments() {
        assert_eq!(traces_url("http://127.0.0.1:4318"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(traces_url("http://127.0.0.1:4318/"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(traces_url("http://collector/otlp/v1/traces"), "http://collector/otlp/v1/traces");
        assert_eq!(signal_url("http://127.0.0.1:4318/", "metrics"), "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(signal_url("http://collector/v1/metrics", "metrics"), "http://collector/v1/metrics");
    }
}
