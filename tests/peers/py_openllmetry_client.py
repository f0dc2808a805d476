#!/usr/bin/env python3
"""py_openllmetry_client.py: one tool call with the Python SDK 1.x client (mcp 1.30.0) over
Streamable HTTP, traced by OpenLLMetry's `opentelemetry-instrumentation-mcp` (0.62.4), its spans
exported over OTLP/HTTP protobuf, for the cross-implementation trace test
(tests/gateway/bridge_otel.rs).

    $MCP_PYTHON_OPENLLMETRY py_openllmetry_client.py URL TOOL TEXT

Opens a root span `py-openllmetry-client`, and inside it initializes a session at URL and calls
TOOL {text: TEXT}. The instrumentation makes a span `{TOOL}.tool` for the call and, inside it, a
span `ResponseStreamWriter` as the request is written, whose W3C context it injects into the
request's `params._meta`. Exporter configured the OpenTelemetry way (OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_SERVICE_NAME); spans exported as they end. Prints one JSON line:
{"trace_id": hex, "root_span_id": hex, "text": the tool's first text content, "is_error": bool}.
"""
import json
import sys

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

import anyio  # noqa: E402
from mcp import ClientSession  # noqa: E402  (after instrument(), which patches mcp on import)
from mcp.client.streamable_http import streamablehttp_client  # noqa: E402


async def main(url: str, tool: str, text: str) -> None:
    tracer = trace.get_tracer("py-openllmetry-client")
    with tracer.start_as_current_span("py-openllmetry-client") as root:
        async with streamablehttp_client(url) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                result = await session.call_tool(tool, {"text": text})
        context = root.get_span_context()
    first = result.content[0].text if result.content else None
    print(
        json.dumps(
            {
                "trace_id": f"{context.trace_id:032x}",
                "root_span_id": f"{context.span_id:016x}",
                "text": first,
                "is_error": bool(result.isError),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: py_openllmetry_client.py URL TOOL TEXT", file=sys.stderr)
        sys.exit(2)
    try:
        anyio.run(main, *sys.argv[1:])
    finally:
        provider.shutdown()
