#!/usr/bin/env python3
"""py_mrtr_client.py — the official Python SDK client (mcp 2.3.0, default mode 'auto') calling a tool
whose handler asks for elicitations, with an elicitation callback that answers every form field
with "from-py" (or, with env MCP_ELICIT_ACTION=decline|cancel, gives that action and no content).
Env MCP_PY_MODE sets the client's mode ('auto' by default; 'legacy': the initialize handshake).
Prints one JSON line: the negotiated version, the discover handshake flag, the messages the
callback was asked, and the tool result.

    $MCP_PYTHON py_mrtr_client.py URL TOOL          # Streamable HTTP
    $MCP_PYTHON py_mrtr_client.py SERVER_CMD TOOL   # stdio: spawn SERVER_CMD (a path, no arguments)
"""

import json
import os
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

asked = []


async def on_elicit(context, params):
    asked.append(params.message)
    action = os.environ.get("MCP_ELICIT_ACTION", "accept")
    if action != "accept":
        return types.ElicitResult(action=action)
    schema = params.requested_schema or {}
    fields = (schema.get("properties") if isinstance(schema, dict) else None) or {}
    return types.ElicitResult(action="accept", content={name: "from-py" for name in fields})


async def main() -> int:
    target, tool = sys.argv[1], sys.argv[2]
    if not target.startswith(("http://", "https://")):
        target = StdioServerParameters(command=target, args=[], env=dict(os.environ))
    async with Client(target, mode=os.environ.get("MCP_PY_MODE", "auto"), cache=None, elicitation_callback=on_elicit) as client:
        result = await client.call_tool(tool, {})
        print(
            json.dumps(
                {
                    "protocolVersion": client.protocol_version,
                    "discover": client.session.discover_result is not None,
                    "asked": asked,
                    "result": result.model_dump(mode="json", by_alias=True, exclude_unset=True),
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
