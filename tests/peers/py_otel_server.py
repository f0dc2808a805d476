#!/usr/bin/env python3
"""py_otel_server.py: a Python SDK (mcp 2.3.0) MCPServer over stdio whose spans are exported over
OTLP/HTTP protobuf, for the cross-implementation trace test (tests/gateway/bridge_otel.rs).

    $MCP_PYTHON_OTEL py_otel_server.py

The instrumentation is the SDK's own (mcp 2.3.0 ships OpenTelemetry spans, SEP-414: a SERVER span
per request, continuing the W3C context found in `params._meta`); this script only installs a
tracer provider that exports, configured the OpenTelemetry way (OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_SERVICE_NAME). Spans are exported as they end (a simple
processor), so that nothing waits in a batch when the bridge closes our stdin.

Tools: `echo {text}` answers with the text.
"""
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider(resource=Resource.create())
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)

from mcp.server.mcpserver import MCPServer  # noqa: E402  (after the provider, which its tracer uses)

server = MCPServer("py-otel")


@server.tool()
def echo(text: str) -> str:
    """Answers with the text."""
    return text


if __name__ == "__main__":
    try:
        server.run("stdio")
    finally:
        provider.shutdown()
