#!/usr/bin/env python3
"""cancel_recorder.py: a tiny MCP server over stdio (standard library only) whose one tool,
`wait_for_cancel`, never answers: it reports one step of progress and waits until the client
cancels it. Each `notifications/cancelled` it receives is written to stderr as

    cancelled request ID: REASON

so a test can see that a cancellation reached the upstream itself (not only that the client
stopped waiting). Any other request than initialize, ping, tools/list and tools/call is answered
with -32601.

    python3 cancel_recorder.py
"""

import json
import sys

TOOL = {
    "name": "wait_for_cancel",
    "description": "Reports one step of progress, then waits until it is cancelled.",
    "inputSchema": {"type": "object", "properties": {}},
}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict) -> None:
    method, params, rid = request["method"], request.get("params") or {}, request["id"]
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "cancel-recorder", "version": "1"},
        }})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [TOOL]}})
    elif method == "tools/call" and params.get("name") == TOOL["name"]:
        token = (params.get("_meta") or {}).get("progressToken")
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": 1, "total": 2}})
        # No answer: the call waits for its cancellation.
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method} here"}})


for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    if "method" not in message:
        continue  # an answer to a request of ours: we make none
    if "id" in message:
        answer(message)
    elif message["method"] == "notifications/cancelled":
        params = message.get("params") or {}
        print(f"cancelled request {params.get('requestId')}: {params.get('reason')}", file=sys.stderr, flush=True)
