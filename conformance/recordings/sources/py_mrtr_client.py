#!/usr/bin/env python3
"""py_mrtr_client.py — the client of the `pyfixture-mrtr-*` recordings: the Python SDK's Client
(mcp 2.3.0) in its default mode='auto', with the canned sampling, elicitation and roots answers of
conformance/recordings/README.md, driving py_mrtr_server.py through every tool and a
`subscriptions/listen` stream.

    $MCP_PYTHON py_mrtr_client.py [--root URI] -- CMD ARGS...   # stdio: spawn the server
    $MCP_PYTHON py_mrtr_client.py [--root URI] --url URL        # Streamable HTTP

--root: the one root the client lists (default file:///tmp/mcp-fixtures/project, as recorded;
`mcp-conformance replay --client` gives it `file://{fixtures}/project`).

Prints one JSON line per step ({"step", "ok", "result" | "error"}); exit 0 when every step ran.
"""

import json
import os
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CreateMessageResult, ElicitResult, Implementation, ListRootsResult, Root, TextContent

root_uri = "file:///tmp/mcp-fixtures/project"


def emit(obj: dict) -> None:
    print(json.dumps(obj, separators=(",", ":")), flush=True)


async def sampling(context, params) -> CreateMessageResult:
    first = params.messages[0].content
    text = first.text if isinstance(first, TextContent) else ""
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=f"Canned reply to: {text}"),
        model="canned-model-1",
        stop_reason="endTurn",
    )


async def elicitation(context, params) -> ElicitResult:
    # Content that fits the requested schema: strings "canned", booleans true, numbers 1.
    fill = {"string": "canned", "boolean": True, "number": 1, "integer": 1}
    properties = (params.requested_schema or {}).get("properties", {})
    content = {key: fill.get(spec.get("type"), "canned") for key, spec in properties.items()}
    return ElicitResult(action="accept", content=content)


async def roots(context) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri=root_uri, name="project")])


def target(argv: list[str]):
    global root_uri
    if len(argv) >= 2 and argv[0] == "--root":
        root_uri, argv = argv[1], argv[2:]
    if len(argv) == 2 and argv[0] == "--url":
        return argv[1]
    if len(argv) >= 2 and argv[0] == "--":
        return StdioServerParameters(command=argv[1], args=argv[2:], env=dict(os.environ))
    sys.exit("usage: py_mrtr_client.py [--root URI] (-- CMD ARGS... | --url URL)")


def text_of(result) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


async def main() -> int:
    client = Client(
        target(sys.argv[1:]),
        mode="auto",
        cache=None,
        client_info=Implementation(name="python-sdk-client", version="2.3.0"),
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        list_roots_callback=roots,
    )
    async with client:
        emit({"step": "connect", "ok": True, "protocolVersion": client.protocol_version})
        tools = await client.list_tools()
        emit({"step": "tools/list", "ok": True, "result": sorted(t.name for t in tools.tools)})
        for name, args in [
            ("greet", {}),
            ("summarize", {"text": "the quick brown fox"}),
            ("where", {}),
            ("plan_trip", {}),
        ]:
            result = await client.call_tool(name, args)
            emit({"step": "tools/call", "name": name, "ok": not result.is_error, "result": text_of(result)})
        async with client.listen(resource_subscriptions=["fixture://note"]) as subscription:
            emit({"step": "subscriptions/listen", "ok": True})
            touched = await client.call_tool("touch", {"uri": "fixture://note"})
            emit({"step": "tools/call", "name": "touch", "ok": not touched.is_error, "result": text_of(touched)})
            with anyio.fail_after(10):
                async for event in subscription:
                    emit({"step": "event", "ok": True, "result": type(event).__name__})
                    break
        read = await client.read_resource("fixture://note")
        emit({"step": "resources/read", "ok": True, "result": read.contents[0].text})
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
