#!/usr/bin/env python3
"""py_otel_client.py: one traced tool call with the Python SDK client (mcp 2.3.0) over Streamable
HTTP, its spans exported over OTLP/HTTP protobuf, for the cross-implementation trace test
(tests/gateway/bridge_otel.rs).

    $MCP_PYTHON_OTEL py_otel_client.py URL TOOL TEXT

Opens a root span `py-otel-client`, and inside it calls TOOL {text: TEXT} at URL; the SDK's own
instrumentation (mcp 2.3.0, SEP-414) makes a CLIENT span for each request it sends and injects its
W3C context into `params._meta`. Exporter configured the OpenTelemetry way
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME); spans exported as they end. Prints one JSON line:
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

import anyio  # noqa: E402
from mcp import Client  # noqa: E402  (after the provider, which its tracer uses)


async def main(url: str, tool: str, text: str) -> None:
    tracer = trace.get_tracer("py-otel-client")
    with tracer.start_as_current_span("py-otel-client") as root:
        async with Client(url, mode="auto", cache=None) as client:
            result = await client.call_tool(tool, {"text": text})
        context = root.get_span_context()
    first = result.content[0].text if result.content else None
    print(
        json.dumps(
            {
                "trace_id": f"{context.trace_id:032x}",
                "root_span_id": f"{context.span_id:016x}",
                "text": first,
                "is_error": bool(result.is_error),
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
