#!/usr/bin/env python3
"""py_otel_server.py: a Python SDK server over stdio whose spans are exported over OTLP/HTTP
protobuf, for the cross-implementation trace tests (tests/gateway/bridge_otel.rs).

    $MCP_PYTHON_OTEL py_otel_server.py          # mcp 2.3.0's MCPServer, its own spans
    $MCP_PYTHON_OPENLLMETRY py_otel_server.py   # mcp 1.30.0's FastMCP, OpenLLMetry's spans

Who makes the MCP spans depends on the interpreter's venv:
- mcp 2.x instruments itself (SEP-414): a SERVER span per request, continuing the W3C context
  found in `params._meta`;
- under mcp 1.x, OpenLLMetry's `opentelemetry-instrumentation-mcp` (`McpInstrumentor`) continues
  the context found in `_meta` and makes a span `ResponseStreamWriter` as each answer is written
  (its tool spans are for the separate `fastmcp` package, not the SDK's FastMCP used here).
This script installs a tracer provider that exports, configured the OpenTelemetry way
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME). Spans are exported as they end (a simple
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
try:
    from opentelemetry.instrumentation.mcp import McpInstrumentor
except ImportError:  # mcp 2.x: traced by the SDK itself
    pass
else:
    McpInstrumentor().instrument()

# After the provider and instrument(), which patches mcp on import.
try:
    from mcp.server.mcpserver import MCPServer as Server  # noqa: E402  (mcp 2.x)
except ImportError:
    from mcp.server.fastmcp import FastMCP as Server  # noqa: E402  (mcp 1.x)

server = Server("py-otel")


@server.tool()
def echo(text: str) -> str:
    """Answers with the text."""
    return text


if __name__ == "__main__":
    try:
        server.run("stdio")
    finally:
        provider.shutdown()
