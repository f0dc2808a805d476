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
//! a call.
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
pub(crate) use enabled::{layer, Exporting};

#[cfg(feature = "otel")]
mod enabled {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    use opentelemetry_sdk::trace::SdkTracerProvider;
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
        let provider =
            SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build();
        let tracer = provider.tracer("mcp-bridge");
        let only_ours = Targets::new().with_target(mcpwire::telemetry::TARGET, LevelFilter::DEBUG);
        let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(only_ours);
        Ok((layer, Exporting { provider }))
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
