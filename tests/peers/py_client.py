#!/usr/bin/env python3
"""py_client.py — drives an MCP server with the official Python SDK client (mcp 2.3.0), a third-party peer.

    $MCP_PYTHON py_client.py [--url URL | --sse URL] [-- CMD ARGS...]
      -- CMD ARGS...  spawn CMD over stdio (default transport)
      --url URL       Streamable HTTP
      --sse URL       legacy HTTP+SSE

The client runs in its DEFAULT mode, mode='auto': it first sends `server/discover` at 2026-07-28 and
falls back to `initialize` on an error, so the first output line tells which handshake happened:
{"step":"initialize","ok":true,"handshake":"discover"|"initialize","protocolVersion":...,"serverInfo":...,
"capabilities":...}. Then it lists tools and runs the steps in env MCP_SCRIPT (a JSON array) or the
default steps (echo {text}, add {a,b}, a tool that does not exist); step syntax and output lines are
those of ts_client.mjs. Exit 0 when the script ran (errors from the server are data), 1 when it could
not connect, 2 on bad usage. With env MCP_HTTP_HEADERS (a JSON object), Streamable HTTP requests carry
those headers too. With env MCP_PY_MODE=legacy the client runs the `initialize` handshake only.
"""

import json
import os
import sys

import anyio
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

DEFAULT_SCRIPT = [
    {"call": "echo", "args": {"text": "hello from py"}},
    {"call": "add", "args": {"a": 2, "b": 3}},
    {"call": "no_such_tool", "args": {}},
]


def usage(msg: str) -> None:
    print(f"py_client: {msg}\nusage: py_client.py [--url URL | --sse URL] [-- CMD ARGS...]", file=sys.stderr)
    sys.exit(2)


def emit(obj: dict) -> None:
    print(json.dumps(obj, separators=(",", ":")), flush=True)


def dump(model):
    """A pydantic result as JSON: camelCase aliases, and only the fields that were set (so mostly what
    the server sent, not the model's defaults such as ttlMs/resultType on a 2025-era connection)."""
    return None if model is None else model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def error_of(e: BaseException) -> dict:
    # MCPError is a JSON-RPC error from the server (or the SDK's mapping of an HTTP rejection);
    # anything else (timeout, closed transport, result validation) gets code null.
    if isinstance(e, MCPError):
        err = {"code": e.code, "message": e.message}
        if e.data is not None:
            err["data"] = e.data
        return err
    return {"code": None, "message": f"{type(e).__name__}: {e}"}


def server_target(argv: list[str]):
    """What mcp.Client accepts as its server: a URL string (Streamable HTTP), a Transport, or
    StdioServerParameters (spawned with stdio_client)."""
    opts, cmd = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    if len(opts) == 2 and opts[0] == "--url":
        if os.environ.get("MCP_HTTP_HEADERS"):
            # Extra request headers (a JSON object), e.g. what an app's own auth middleware reads.
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = create_mcp_http_client(headers=json.loads(os.environ["MCP_HTTP_HEADERS"]))
            return streamable_http_client(opts[1], http_client=http)
        return opts[1]
    if len(opts) == 2 and opts[0] == "--sse":
        return sse_client(opts[1])
    if opts or not cmd:
        usage("give -- CMD ARGS..., --url URL or --sse URL")
    # stdio_client passes the child only a few env vars (HOME, PATH, ...) plus `env`; pass ours whole.
    # The server's stderr goes to our stderr.
    return StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))


def step_of(client: Client, s: dict):
    """(label, extra fields, coroutine factory) for one script step."""
    if "call" in s:
        return "tools/call", {"name": s["call"]}, lambda: client.call_tool(s["call"], s.get("args") or {})
    if "list" in s:
        fn = {
            "tools": client.list_tools,
            "resources": client.list_resources,
            "resourceTemplates": client.list_resource_templates,
            "prompts": client.list_prompts,
        }.get(s["list"])
        if fn is None:
            return f"list {s['list']}", {}, None
        return f"{s['list']}/list", {}, fn
    if "read" in s:
        return "resources/read", {"uri": s["read"]}, lambda: client.read_resource(s["read"])
    if "prompt" in s:
        return "prompts/get", {"name": s["prompt"]}, lambda: client.get_prompt(s["prompt"], s.get("args") or {})
    if s.get("ping"):
        # Client.send_ping is deprecated (ping is gone in 2026-07-28); the session method sends it anyway,
        # so a modern server's answer (an error) is reported as data.
        return "ping", {}, lambda: client.session.send_ping()
    return "unknown", {"spec": s}, None


async def main() -> int:
    script = DEFAULT_SCRIPT
    if os.environ.get("MCP_SCRIPT"):
        try:
            script = json.loads(os.environ["MCP_SCRIPT"])
        except ValueError as e:
            usage(f"MCP_SCRIPT is not JSON: {e}")
        if not isinstance(script, list):
            usage("MCP_SCRIPT must be a JSON array")
    target = server_target(sys.argv[1:])

    # mode='auto' is the default and is what we want to exercise; spelled out for the reader.
    # cache=None: the default response cache could answer a repeated list/read (on 2026-07-28
    # connections, when the server sends ttlMs hints) without asking the server; every step here
    # must reach the server.
    client = Client(target, mode=os.environ.get("MCP_PY_MODE", "auto"), cache=None)
    try:
        await client.__aenter__()
    except Exception as e:  # noqa: BLE001 — any failure to connect is exit 1
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]  # anyio task groups wrap the real cause
        emit({"step": "initialize", "ok": False, "error": error_of(e)})
        return 1
    try:
        session = client.session
        emit(
            {
                "step": "initialize",
                "ok": True,
                "handshake": "discover" if session.discover_result is not None else "initialize",
                "protocolVersion": client.protocol_version,
                "serverInfo": dump(client.server_info),
                "capabilities": dump(client.server_capabilities),
                "instructions": client.instructions,
            }
        )
        for s in [{"list": "tools"}, *script]:
            label, extra, run = step_of(client, s)
            try:
                if run is None:
                    raise ValueError(f"unknown step {s!r}")
                emit({"step": label, **extra, "ok": True, "result": dump(await run())})
            except Exception as e:  # noqa: BLE001 — errors are data
                emit({"step": label, **extra, "ok": False, "error": error_of(e)})
    finally:
        await client.__aexit__(None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
