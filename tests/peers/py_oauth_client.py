#!/usr/bin/env python3
"""py_oauth_client.py — the official Python SDK client (mcp 2.x, its OAuth support) against an MCP
server protected by OAuth.

    $MCP_PYTHON py_oauth_client.py --url URL

The SDK's OAuthClientProvider (an httpx auth flow) meets the 401, discovers the protected resource
metadata and the authorization server, and runs the authorization-code flow with PKCE; this script
plays the browser: its redirect handler GETs the authorization URL without following the redirect and
its callback handler returns the code and state from the Location. The client is pre-registered (env
MCP_OAUTH_CLIENT_ID, default "py-client"; a public client, token_endpoint_auth_method "none"), so no
dynamic registration happens. Then it calls the tools of env MCP_SCRIPT (JSON array of
{"call":NAME,"args":{...}}, default one echo call).

One JSON line per step: {"step":"authorize","query":{...}} (the authorization request's query),
{"step":"initialize","ok":...}, {"step":"tools/call","ok":bool,"result"|"error"}. No token is printed.
Exit 0 when the script ran, 1 when the flow or the connection failed.
"""

import json
import os
import sys
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:1/callback"


def emit(obj: dict) -> None:
    print(json.dumps(obj, separators=(",", ":")), flush=True)


class Memory(TokenStorage):
    def __init__(self, client_id: str):
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id=client_id,
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] != "--url":
        print("usage: py_oauth_client.py --url URL", file=sys.stderr)
        return 2
    url = sys.argv[2]
    script = json.loads(os.environ.get("MCP_SCRIPT") or '[{"call":"echo","args":{"text":"hi"}}]')
    redirected: dict = {}

    async def redirect_handler(authorization_url: str) -> None:
        emit({"step": "authorize", "query": dict(parse_qsl(urlsplit(authorization_url).query))})
        async with httpx2.AsyncClient(follow_redirects=False) as browser:
            response = await browser.get(authorization_url)
        location = response.headers.get("location")
        if not location:
            raise RuntimeError(f"the authorization endpoint answered {response.status_code} without a redirect")
        redirected.update(parse_qsl(urlsplit(location).query))

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirected["code"], state=redirected.get("state"))

    storage = Memory(os.environ.get("MCP_OAUTH_CLIENT_ID", "py-client"))
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(redirect_uris=[REDIRECT], client_name="py-oauth-client"),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    http = httpx2.AsyncClient(auth=provider)
    client = Client(streamable_http_client(url, http_client=http), cache=None)
    try:
        await client.__aenter__()
    except Exception as e:  # noqa: BLE001 — any failure to connect is exit 1
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        emit({"step": "initialize", "ok": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    try:
        scope = storage.tokens.scope if storage.tokens else None
        emit({"step": "initialize", "ok": True, "protocolVersion": client.protocol_version, "scope": scope})
        for s in script:
            try:
                result = await client.call_tool(s["call"], s.get("args") or {})
                emit({"step": "tools/call", "name": s["call"], "ok": True,
                      "result": result.model_dump(mode="json", by_alias=True, exclude_unset=True)})
            except Exception as e:  # noqa: BLE001 — reported as data
                emit({"step": "tools/call", "name": s["call"], "ok": False, "error": f"{type(e).__name__}: {e}"})
    finally:
        await client.__aexit__(None, None, None)
        await http.aclose()
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
