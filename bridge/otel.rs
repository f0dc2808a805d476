//! `serve`'s OpenTelemetry traces: the library's spans (target `mcpwire::telemetry`, see
//! `mcpwire::telemetry`) exported over OTLP/HTTP protobuf by the SDK's batch span processor.
//!
//! Configured the OpenTelemetry way: `--otlp-endpoint URL` (the collector's base URL, as
//! `OTEL_EXPORTER_OTLP_ENDPOINT`: `/v1/traces` is appended unless the path already ends so),
//! else `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`; `OTEL_SERVICE_NAME`
//! and `OTEL_RESOURCE_ATTRIBUTES` (service name `mcp-bridge` when neither names one),
//! `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_*` (the queue's bound, 2048 spans
//! by default), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SDK_DISABLED`. Off unless an endpoint is
//! given. The processor exports from a thread of its own: a call only queues its spans, a span
//! that finds the queue full is dropped, so a slow or unreachable collector never slows or fails
//! a call. The spans not delivered are counted in `/metrics`
//! (`mcp_bridge_otel_spans_dropped_total`, by `reason`: `queue_full`, `export_failed`): the
//! SDK's processor counts its drops for itself only, so the bound is kept here, in front of it
//! (the spans it holds are counted from queued to handed to the exporter), and the exporter is
//! wrapped to count the spans of a failed export.
//!
//! Without the `otel` feature the flag is refused and the variables are ignored (with a warning).
//!
//! Not here: metrics or logs over OTLP, gRPC.

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

/// Where spans go.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Endpoint {
    /// `--otlp-endpoint`, as the full URL of the traces path.
    Flag(String),
    /// The exporter reads `OTEL_EXPORTER_OTLP_*` itself.
    Environment,
}

/// `base` with `/v1/traces` appended, as the OTLP spec does with `OTEL_EXPORTER_OTLP_ENDPOINT`.
fn traces_url(base: &str) -> String {
    let base = base.trim();
    if base.trim_end_matches('/').ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{}/v1/traces", base.trim_end_matches('/'))
    }
}

#[cfg(feature = "otel")]
pub(crate) use enabled::{layer, render_metrics, Exporting};

/// Nothing to add to `/metrics` without the `otel` feature.
#[cfg(not(feature = "otel"))]
pub(crate) fn render_metrics(_out: &mut String) {}

#[cfg(feature = "otel")]
mod enabled {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::trace::{
        BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter, SpanProcessor,
    };
    use opentelemetry_sdk::Resource;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::Layer;

    use super::Endpoint;

    /// The running exporter; dropping it flushes what is queued (within the export timeout).
    pub(crate) struct Exporting {
        provider: SdkTracerProvider,
    }

    impl Drop for Exporting {
        fn drop(&mut self) {
            let _ = self.provider.shutdown();
        }
    }

    /// The layer that turns the library's spans into OpenTelemetry spans exported to
    /// `endpoint`, and the exporter to keep alive while serving. Must be called outside a
    /// tokio runtime (the exporter's blocking HTTP client has a runtime of its own).
    ///
    /// # Errors
    /// When the endpoint or the environment's settings do not make an exporter.
    pub(crate) fn layer<S>(endpoint: &Endpoint) -> Result<(impl Layer<S>, Exporting), String>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http().with_protocol(Protocol::HttpBinary);
        if let Endpoint::Flag(url) = endpoint {
            exporter = exporter.with_endpoint(url.clone());
        }
        let exporter = exporter.build().map_err(|e| format!("the OTLP exporter: {e}"))?;
        let mut resource = Resource::builder();
        let names_service = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
            || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
        if !names_service {
            resource = resource.with_service_name("mcp-bridge");
        }
        let bound = queue_bound();
        let queued = Arc::new(AtomicUsize::new(0));
        let exporter = Counting { inner: exporter, queued: queued.clone() };
        let config = BatchConfigBuilder::default().with_max_queue_size(bound).build();
        let batch = BatchSpanProcessor::builder(exporter).with_batch_config(config).build();
        let processor = Bounded { inner: batch, queued, bound };
        let provider =
            SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource.build()).build();
        let tracer = provider.tracer("mcp-bridge");
        let only_ours = Targets::new().with_target(mcpwire::telemetry::TARGET, LevelFilter::DEBUG);
        let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(only_ours);
        Ok((layer, Exporting { provider }))
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
    }
}
