#!/usr/bin/env node
// ts_client.mjs — drives an MCP server with the official TypeScript SDK client (a third-party peer).
//
//   node ts_client.mjs [--url URL | --sse URL] [-- CMD ARGS...]
//     -- CMD ARGS...  spawn CMD over stdio (default transport)
//     --url URL       Streamable HTTP (StreamableHTTPClientTransport)
//     --sse URL       legacy HTTP+SSE (SSEClientTransport)
//
// After connecting it prints one JSON line {"step":"initialize",serverInfo,protocolVersion,capabilities},
// then lists tools, then runs the steps in env MCP_SCRIPT (a JSON array) or the default steps
// (echo {text}, add {a,b}, a tool that does not exist). Steps:
//   {"call":NAME,"args":{...}}  {"list":"tools"|"resources"|"resourceTemplates"|"prompts"}
//   {"read":URI}  {"prompt":NAME,"args":{...}}  {"ping":true}
//   {"complete":{"ref":{...},"argument":{"name":..,"value":..}}}
//   {"call":NAME,"args":{...},"progress":true}   the result gets "progress": the notifications seen
//   {"call":NAME,"args":{...},"cancelAfterProgress":N}   aborts the call after N progress notifications
//   {"awaitNotification":METHOD,"count":N}   waits (10 s at most) until N notifications of METHOD came
//                                            since the connection began, on any stream; result {count}
//   {"pause":true}   prints {"step":"pause"} and waits for one line on stdin (the test acts meanwhile)
//   {"awaitResumption":true}   waits (15 s at most) until the transport has reopened its GET stream
//                              with Last-Event-ID and been answered 200; result {lastEventId,status}
// With env MCP_CLIENT_LABEL=L the client declares sampling and elicitation: each request is announced
// as a line {"step":"sampling"|"elicitation","label":L,"request":...}; with MCP_WAIT_STDIN=1 the answer
// waits for one line on stdin (so a test can hold several clients' requests in flight at once); the
// sampled text is "sampled by L", the elicitation answer {"action":"accept","content":{"name":L}}.
// One JSON line per step: {"step":...,"ok":true,"result":...} or {"step":...,"ok":false,"error":{code,message}}.
// Exit 0 when the script ran (errors from the server are data), 1 when it could not connect, 2 on bad usage.
// With env MCP_BEARER_TOKEN set, HTTP requests carry `Authorization: Bearer <token>` (requestInit);
// with env MCP_HTTP_HEADERS (a JSON object) they carry those headers too.
// The SDK is loaded from MCP_TS_SDK_DIR (node_modules holding @modelcontextprotocol/sdk; see peers.env).
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

const sdkDir =
  process.env.MCP_TS_SDK_DIR ||
  join(process.env.MCPWIRE_PEERS || join(homedir(), '.cache/mcp-peers'), 'npm/node_modules');
// This script lives in the repo, not next to node_modules: resolve the SDK as if from inside sdkDir.
// (require() gets the SDK's CommonJS build; all SDK classes then come from that one build.)
const require = createRequire(join(sdkDir, 'noop.js'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');

const DEFAULT_SCRIPT = [
  { call: 'echo', args: { text: 'hello from ts' } },
  { call: 'add', args: { a: 2, b: 3 } },
  { call: 'no_such_tool', args: {} },
];

function usage(msg) {
  process.stderr.write(`ts_client: ${msg}\nusage: node ts_client.mjs [--url URL | --sse URL] [-- CMD ARGS...]\n`);
  process.exit(2);
}

const emit = obj => process.stdout.write(JSON.stringify(obj) + '\n');

// GETs sent with Last-Event-ID (the SDK resuming its stream) and their answers' statuses.
const resumptions = [];
const resumptionWaiters = [];

function resumptionTrackingFetch(url, init) {
  const resumedFrom = init?.method === 'GET' ? new Headers(init?.headers).get('last-event-id') : null;
  const answer = fetch(url, init);
  if (resumedFrom)
    answer.then(
      response => {
        resumptions.push({ lastEventId: resumedFrom, status: response.status });
        for (const waiter of resumptionWaiters.splice(0)) waiter();
      },
      () => {},
    );
  return answer;
}

function makeTransport(argv, trackResumption) {
  const token = process.env.MCP_BEARER_TOKEN;
  // MCP_HTTP_HEADERS: extra request headers (a JSON object), e.g. what an app's own auth middleware reads.
  const headers = { ...JSON.parse(process.env.MCP_HTTP_HEADERS || '{}'), ...(token ? { Authorization: `Bearer ${token}` } : {}) };
  let options = Object.keys(headers).length ? { requestInit: { headers } } : undefined;
  if (trackResumption) options = { ...options, fetch: resumptionTrackingFetch };
  const i = argv.indexOf('--');
  const opts = i < 0 ? argv : argv.slice(0, i);
  const cmd = i < 0 ? [] : argv.slice(i + 1);
  if (opts[0] === '--url' && opts[1]) {
    const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return new StreamableHTTPClientTransport(new URL(opts[1]), options);
  }
  if (opts[0] === '--sse' && opts[1]) {
    const { SSEClientTransport } = require('@modelcontextprotocol/sdk/client/sse.js');
    return new SSEClientTransport(new URL(opts[1]), options);
  }
  if (opts.length || !cmd.length) usage('give -- CMD ARGS..., --url URL or --sse URL');
  const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
  // The SDK passes the child only a few env vars (HOME, PATH, ...) unless told otherwise; pass ours
  // whole so servers see e.g. RUST_LOG or PORT. Server stderr goes to our stderr ('inherit').
  return new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), env: { ...process.env }, stderr: 'inherit' });
}

// Errors as data: McpError carries the JSON-RPC code; other errors (timeouts, closed transport,
// client-side validation) get code null.
function errorOf(e) {
  const code = typeof e?.code === 'number' ? e.code : null;
  // McpError prefixes the server's message with "MCP error CODE: "; strip it to report the wire message.
  const message = String(e?.message ?? e).replace(code === null ? /^$/ : `MCP error ${code}: `, '');
  const err = { code, message };
  if (e?.data !== undefined) err.data = e.data;
  return err;
}

async function callWithProgress(client, s) {
  const progress = [];
  const controller = new AbortController();
  const options = {
    signal: controller.signal,
    onprogress: p => {
      progress.push(p);
      if (s.cancelAfterProgress !== undefined && progress.length >= s.cancelAfterProgress) controller.abort('cancelled by the test');
    },
  };
  const result = await client.callTool({ name: s.call, arguments: s.args ?? {} }, undefined, options);
  return { ...result, progress };
}

// Notifications seen by method, and the steps waiting for more.
const notificationsSeen = new Map();
const notificationWaiters = [];

async function awaitNotifications(method, count) {
  const deadline = Date.now() + 10000;
  while ((notificationsSeen.get(method) ?? 0) < count) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`saw ${notificationsSeen.get(method) ?? 0} of ${count} ${method}`);
    await new Promise(resolve => {
      const timer = setTimeout(resolve, left);
      notificationWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  return { count: notificationsSeen.get(method) };
}

async function awaitResumption() {
  const deadline = Date.now() + 15000;
  for (;;) {
    const done = resumptions.find(r => r.status === 200);
    if (done) return done;
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`no resumption answered 200: ${JSON.stringify(resumptions)}`);
    await new Promise(resolve => {
      const timer = setTimeout(resolve, left);
      resumptionWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

let stdinLinesOnce = null;
function sharedStdinLines() {
  stdinLinesOnce ??= stdinLines();
  return stdinLinesOnce;
}

async function runStep(client, s) {
  if (s.call !== undefined && (s.progress || s.cancelAfterProgress !== undefined))
    return ['tools/call', { name: s.call }, () => callWithProgress(client, s)];
  if (s.call !== undefined) return ['tools/call', { name: s.call }, () => client.callTool({ name: s.call, arguments: s.args ?? {} })];
  if (s.complete !== undefined) return ['completion/complete', {}, () => client.complete(s.complete)];
  if (s.list !== undefined) {
    const fn = { tools: 'listTools', resources: 'listResources', resourceTemplates: 'listResourceTemplates', prompts: 'listPrompts' }[s.list];
    if (!fn) return [`list ${s.list}`, {}, () => Promise.reject(new Error(`unknown list kind ${s.list}`))];
    return [`${s.list}/list`, {}, () => client[fn]()];
  }
  if (s.read !== undefined) return ['resources/read', { uri: s.read }, () => client.readResource({ uri: s.read })];
  if (s.prompt !== undefined) return ['prompts/get', { name: s.prompt }, () => client.getPrompt({ name: s.prompt, arguments: s.args ?? {} })];
  if (s.ping) return ['ping', {}, () => client.ping()];
  if (s.pause)
    return ['pause', {}, async () => {
      emit({ step: 'pause' });
      await sharedStdinLines().next();
      return {};
    }];
  if (s.awaitResumption) return ['awaitResumption', {}, () => awaitResumption()];
  if (s.awaitNotification !== undefined)
    return ['awaitNotification', { method: s.awaitNotification }, () => awaitNotifications(s.awaitNotification, s.count ?? 1)];
  return ['unknown', { spec: s }, () => Promise.reject(new Error('unknown step'))];
}

async function main() {
  let script = DEFAULT_SCRIPT;
  if (process.env.MCP_SCRIPT) {
    try {
      script = JSON.parse(process.env.MCP_SCRIPT);
    } catch (e) {
      usage(`MCP_SCRIPT is not JSON: ${e.message}`);
    }
    if (!Array.isArray(script)) usage('MCP_SCRIPT must be a JSON array');
  }
  const transport = makeTransport(process.argv.slice(2), script.some(s => s.awaitResumption));

  // The Client keeps the negotiated version to itself (only HTTP transports get it, via
  // setProtocolVersion). Protocol.connect() chains any onmessage already set on the transport,
  // so a spy installed before connect() sees the raw initialize response.
  let protocolVersion = null;
  transport.onmessage = msg => {
    if (protocolVersion === null && msg?.result?.protocolVersion) protocolVersion = msg.result.protocolVersion;
    if (msg?.method !== undefined && msg?.id === undefined) {
      notificationsSeen.set(msg.method, (notificationsSeen.get(msg.method) ?? 0) + 1);
      for (const waiter of notificationWaiters.splice(0)) waiter();
    }
  };

  const label = process.env.MCP_CLIENT_LABEL;
  const capabilities = label ? { sampling: {}, elicitation: {} } : {};
  const client = new Client({ name: 'mcpwire-ts-driver', version: '0.1.0' }, { capabilities });
  if (label) {
    const types = require('@modelcontextprotocol/sdk/types.js');
    const lines = process.env.MCP_WAIT_STDIN === '1' ? sharedStdinLines() : null;
    client.setRequestHandler(types.CreateMessageRequestSchema, async request => {
      emit({ step: 'sampling', label, request: request.params });
      if (lines) await lines.next();
      return { role: 'assistant', content: { type: 'text', text: `sampled by ${label}` }, model: 'test', stopReason: 'endTurn' };
    });
    client.setRequestHandler(types.ElicitRequestSchema, async request => {
      emit({ step: 'elicitation', label, request: request.params });
      if (lines) await lines.next();
      return { action: 'accept', content: { name: label } };
    });
  }
  try {
    await client.connect(transport);
  } catch (e) {
    emit({ step: 'initialize', ok: false, error: errorOf(e) });
    await client.close().catch(() => {});
    process.exit(1);
  }
  emit({
    step: 'initialize',
    ok: true,
    serverInfo: client.getServerVersion(),
    protocolVersion,
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
  });

  for (const s of [{ list: 'tools' }, ...script]) {
    const [step, extra, run] = await runStep(client, s);
    try {
      emit({ step, ...extra, ok: true, result: await run() });
    } catch (e) {
      emit({ step, ...extra, ok: false, error: errorOf(e) });
    }
  }

  // Streamable HTTP: end the session politely (DELETE); stdio: close() ends stdin, then kills.
  if (typeof transport.terminateSession === 'function') await transport.terminateSession().catch(() => {});
  await client.close().catch(() => {});
}

// One promise per line of stdin, in order.
function stdinLines() {
  const waiting = [];
  let buffered = 0;
  process.stdin.on('data', chunk => {
    for (const c of chunk.toString()) {
      if (c !== '\n') continue;
      if (waiting.length) waiting.shift()();
      else buffered++;
    }
  });
  return {
    next: () =>
      new Promise(resolve => {
        if (buffered > 0) {
          buffered--;
          resolve();
        } else waiting.push(resolve);
      }),
  };
}

main().then(
  () => process.exit(0),
  e => {
    process.stderr.write(`ts_client: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
