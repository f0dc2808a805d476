#!/usr/bin/env node
// ts2_client.mjs — drives an MCP server with the official TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0), a third-party peer that speaks both eras.
//
//   node ts2_client.mjs [--mode legacy|auto] (--url URL | -- CMD ARGS...)
//
// --mode: the SDK's versionNegotiation mode; without it the SDK's own default (legacy: initialize).
// With env MCP_HTTP_HEADERS (a JSON object) every HTTP request carries those headers too.
// The client declares elicitation, sampling and roots and answers them with canned data (an
// elicitation: accept, every form field "from-ts2"; or, with env MCP_ELICIT_ACTION=decline|cancel,
// that action and no content); in the 2026-07-28 era those answers feed the
// SDK's multi-round-trip loop. First output line: {"step":"connect","protocolVersion":...}; then
// tools/list ({"result": sorted names, "tools": the tools as listed}) and the steps of env MCP_SCRIPT
// (a JSON array of {"call": NAME, "args": {...}}), one JSON line each,
// {"step","name","ok","result"|"error","structured"} ("structured": structuredContent, which the
// SDK has checked against the listed outputSchema), and last {"step":"asked","count":N} (how many
// elicitations the handler answered). Exit 0 when the script ran, 1 when it could not connect.
//
// The SDK is loaded from MCP_TS2_DIR (node_modules holding @modelcontextprotocol/client; see
// peers.env), by file: its package exports are ESM and this script does not live beside it.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdkDir =
  process.env.MCP_TS2_DIR || join(process.env.MCPWIRE_PEERS || join(homedir(), '.cache/mcp-peers'), 'npm2/node_modules');
const load = file => import(pathToFileURL(join(sdkDir, '@modelcontextprotocol/client/dist', file)).href);
const { Client, StreamableHTTPClientTransport } = await load('index.mjs');
const { StdioClientTransport } = await load('stdio.mjs');

const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n');
const usage = msg => {
  process.stderr.write(`ts2_client: ${msg}\nusage: node ts2_client.mjs [--mode legacy|auto] (--url URL | -- CMD ARGS...)\n`);
  process.exit(2);
};

let argv = process.argv.slice(2);
let mode;
if (argv[0] === '--mode') {
  mode = argv[1];
  argv = argv.slice(2);
}
let transport;
if (argv[0] === '--url' && argv.length === 2) {
  const headers = JSON.parse(process.env.MCP_HTTP_HEADERS || '{}');
  const options = Object.keys(headers).length ? { requestInit: { headers } } : undefined;
  transport = new StreamableHTTPClientTransport(new URL(argv[1]), options);
} else if (argv[0] === '--' && argv.length >= 2) {
  transport = new StdioClientTransport({ command: argv[1], args: argv.slice(2), env: process.env, stderr: 'inherit' });
} else {
  usage('give --url URL or -- CMD ARGS...');
}
const script = process.env.MCP_SCRIPT ? JSON.parse(process.env.MCP_SCRIPT) : [];

const options = { capabilities: { elicitation: {}, sampling: {}, roots: {} } };
if (mode) options.versionNegotiation = { mode };
const client = new Client({ name: 'ts2-driver', version: '2.4.0' }, options);
let asked = 0;
client.setRequestHandler('elicitation/create', async request => {
  asked += 1;
  const action = process.env.MCP_ELICIT_ACTION ?? 'accept';
  if (action !== 'accept') return { action };
  const fields = Object.keys(request.params.requestedSchema?.properties ?? {});
  return { action: 'accept', content: Object.fromEntries(fields.map(f => [f, 'from-ts2'])) };
});
client.setRequestHandler('sampling/createMessage', async request => {
  const first = request.params.messages[0]?.content;
  const text = first && first.type === 'text' ? first.text : '';
  return { role: 'assistant', content: { type: 'text', text: `Canned reply to: ${text}` }, model: 'canned-model-1' };
});
client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///tmp/mcp-fixtures/project', name: 'project' }] }));

try {
  await client.connect(transport);
} catch (e) {
  emit({ step: 'connect', ok: false, error: String(e?.message ?? e) });
  process.exit(1);
}
emit({ step: 'connect', ok: true, protocolVersion: client.getNegotiatedProtocolVersion() ?? null });
try {
  const tools = await client.listTools();
  emit({ step: 'tools/list', ok: true, result: tools.tools.map(t => t.name).sort(), tools: tools.tools });
  for (const step of script) {
    try {
      const result = await client.callTool({ name: step.call, arguments: step.args ?? {} });
      const text = (result.content ?? []).filter(c => c.type === 'text').map(c => c.text).join(' ');
      emit({ step: 'tools/call', name: step.call, ok: !result.isError, result: text, structured: result.structuredContent ?? null });
    } catch (e) {
      emit({ step: 'tools/call', name: step.call, ok: false, error: String(e?.message ?? e) });
    }
  }
  emit({ step: 'asked', count: asked });
} finally {
  await client.close();
}
