#!/usr/bin/env python3
"""py_openllmetry_server.py: a Python SDK 1.x (mcp 1.30.0) FastMCP server over stdio traced by
OpenLLMetry's `opentelemetry-instrumentation-mcp` (0.62.4), its spans exported over OTLP/HTTP
protobuf, for the cross-implementation trace test (tests/gateway/bridge_otel.rs).

    $MCP_PYTHON_OPENLLMETRY py_openllmetry_server.py

The instrumentation continues the W3C context it finds in a request's `params._meta` and makes a
span `ResponseStreamWriter` as each answer is written, in the context of the request it answers.
(Its tool spans are for the separate `fastmcp` package, not the SDK's own FastMCP used here.)
Exporter configured the OpenTelemetry way (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME); spans
exported as they end, so that nothing waits in a batch when the bridge closes our stdin.

Tools: `echo {text}` answers with the text.
"""
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.mcp import McpInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

provider = TracerProvider(resource=Resource.create())
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
McpInstrumentor().instrument()

from mcp.server.fastmcp import FastMCP  # noqa: E402  (after instrument(), which patches mcp on import)

server = FastMCP("py-openllmetry")


@server.tool()
def echo(text: str) -> str:
    """Answers with the text."""
    return text


if __name__ == "__main__":
    try:
        server.run("stdio")
    finally:
        provider.shutdown()
