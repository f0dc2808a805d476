#!/usr/bin/env python3
"""py_otel_client.py: one traced tool call with the Python SDK client over Streamable HTTP, its
spans exported over OTLP/HTTP protobuf, for the cross-implementation trace tests
(tests/gateway/bridge_otel.rs).

    $MCP_PYTHON_OTEL py_otel_client.py URL TOOL TEXT          # mcp 2.3.0, its own spans
    $MCP_PYTHON_OPENLLMETRY py_otel_client.py URL TOOL TEXT   # mcp 1.30.0, OpenLLMetry's spans

Opens a root span `py-otel-client`, and inside it calls TOOL {text: TEXT} at URL. Who makes the
MCP spans depends on the interpreter's venv:
- mcp 2.x instruments itself (SEP-414): a CLIENT span per request sent, its W3C context injected
  into `params._meta`;
- under mcp 1.x, OpenLLMetry's `opentelemetry-instrumentation-mcp` (`McpInstrumentor`): a span
  `{TOOL}.tool` for the call and, inside it, `ResponseStreamWriter` as the request is written,
  whose context it injects into `params._meta`.
Exporter configured the OpenTelemetry way (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME); spans
exported as they end. Prints one JSON line:
{"trace_id": hex, "root_span_id": hex, "text": the tool's first text content, "is_error": bool}.
"""
import json
import sys

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

import anyio  # noqa: E402
import mcp  # noqa: E402  (after the provider and instrument(), which patches mcp on import)


async def call(url: str, tool: str, text: str):
    if hasattr(mcp, "Client"):  # mcp 2.x
        async with mcp.Client(url, mode="auto", cache=None) as client:
            result = await client.call_tool(tool, {"text": text})
        return result.content, result.is_error
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url) as (read, write, _):
        async with mcp.ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, {"text": text})
    return result.content, result.isError


async def main(url: str, tool: str, text: str) -> None:
    tracer = trace.get_tracer("py-otel-client")
    with tracer.start_as_current_span("py-otel-client") as root:
        content, is_error = await call(url, tool, text)
        context = root.get_span_context()
    print(
        json.dumps(
            {
                "trace_id": f"{context.trace_id:032x}",
                "root_span_id": f"{context.span_id:016x}",
                "text": content[0].text if content else None,
                "is_error": bool(is_error),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: py_otel_client.py URL TOOL TEXT", file=sys.stderr)
        sys.exit(2)
    try:
        anyio.run(main, *sys.argv[1:])
    finally:
        provider.shutdown()
