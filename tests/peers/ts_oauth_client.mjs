#!/usr/bin/env node
// ts_oauth_client.mjs — the official TypeScript SDK client (v1, its OAuth support) against an MCP
// server protected by OAuth: the SDK discovers the protected resource metadata and the
// authorization server from the 401, starts an authorization-code flow with PKCE, and this
// script plays the browser: it GETs the authorization URL without following the redirect, takes
// the code from the Location, checks the state, and hands the code to transport.finishAuth().
// Then it reconnects with the token and calls tools.
//
//   node ts_oauth_client.mjs --url URL
//
// Env: MCP_OAUTH_CLIENT_ID (a pre-registered public client, default "ts-client"),
// MCP_SCRIPT (JSON array of {"call":NAME,"args":{...}}, default one echo call).
// One JSON line per step: {"step":"authorize","authorizationUrl":{...query}} (the query of the
// authorization request, so the test can check resource/scope/PKCE), {"step":"token",
// "scope":...}, {"step":"initialize",...}, {"step":"tools/call","ok":bool,"result"|"error"}.
// No token is ever printed. Exit 0 when the script ran, 1 when the flow failed.
// The SDK is loaded from MCP_TS_SDK_DIR (see peers.env).
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

const sdkDir =
  process.env.MCP_TS_SDK_DIR ||
  join(process.env.MCPWIRE_PEERS || join(homedir(), '.cache/mcp-peers'), 'npm/node_modules');
const require = createRequire(join(sdkDir, 'noop.js'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { UnauthorizedError } = require('@modelcontextprotocol/sdk/client/auth.js');

const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n');
const argv = process.argv.slice(2);
if (argv[0] !== '--url' || !argv[1]) {
  process.stderr.write('usage: node ts_oauth_client.mjs --url URL\n');
  process.exit(2);
}
const url = new URL(argv[1]);
const script = process.env.MCP_SCRIPT ? JSON.parse(process.env.MCP_SCRIPT) : [{ call: 'echo', args: { text: 'hi' } }];
const REDIRECT = 'http://127.0.0.1:1/callback';

class Provider {
  constructor() {
    this._tokens = undefined;
    this._verifier = undefined;
    this.code = undefined;
    this._state = Math.random().toString(36).slice(2);
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return { client_name: 'ts-oauth-client', redirect_uris: [REDIRECT], grant_types: ['authorization_code'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() {
    return this._state;
  }
  clientInformation() {
    return { client_id: process.env.MCP_OAUTH_CLIENT_ID || 'ts-client' };
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
    emit({ step: 'token', scope: tokens.scope ?? null, token_type: tokens.token_type });
  }
  async redirectToAuthorization(authorizationUrl) {
    emit({ step: 'authorize', authorizationUrl: Object.fromEntries(authorizationUrl.searchParams) });
    // The browser's part: the authorization server answers with a redirect to our callback.
    const response = await fetch(authorizationUrl, { redirect: 'manual' });
    const location = response.headers.get('location');
    if (!location) throw new Error(`the authorization endpoint answered ${response.status} without a redirect`);
    const back = new URL(location);
    if (back.searchParams.get('state') !== this._state) throw new Error('the redirect carries another state');
    this.code = back.searchParams.get('code');
  }
  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }
  codeVerifier() {
    return this._verifier;
  }
}

const provider = new Provider();
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const client = new Client({ name: 'ts-oauth-client', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
};

let connected;
try {
  try {
    connected = await connect();
  } catch (e) {
    if (!(e instanceof UnauthorizedError) || !provider.code) throw e;
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await transport.finishAuth(provider.code);
    connected = await connect();
  }
} catch (e) {
  emit({ step: 'initialize', ok: false, error: { message: String(e?.message ?? e), code: e?.code ?? null } });
  process.exit(1);
}
const { client } = connected;
emit({ step: 'initialize', ok: true, serverInfo: client.getServerVersion(), protocolVersion: connected.transport.protocolVersion ?? null });
for (const s of script) {
  try {
    const result = await client.callTool({ name: s.call, arguments: s.args || {} });
    emit({ step: 'tools/call', name: s.call, ok: true, result });
  } catch (e) {
    emit({ step: 'tools/call', name: s.call, ok: false, error: { code: e?.code ?? null, message: String(e?.message ?? e) } });
  }
}
await client.close();
process.exit(0);
