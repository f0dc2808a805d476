#!/usr/bin/env node
// h2_client.mjs — N concurrent MCP tools/call requests over ONE HTTP/2 connection, with Node's own
// http2 module (a third-party HTTP/2 client; h2c with prior knowledge for an http:// URL).
//
//   node h2_client.mjs URL [N]      (N defaults to 100)
//
// Opens a session (initialize, notifications/initialized), then sends N `echo {text:"call I"}` calls
// at once, each on its own stream of the same connection, each answered as an SSE stream. Prints one
// JSON line: {initStatus, protocol, session, calls, answered, sse, mismatched, nextStreamId} where
// `answered` counts 200 answers whose SSE data carried the call's own id and text, and `nextStreamId`
// is the connection's own HTTP/2 state (2k + 1 after k streams: every request went over it), and
// `maxConcurrentStreams` the limit the server announced in its SETTINGS.
// Exit 0 when it ran (the counts are the result), 1 on a connection error.
import http2 from 'node:http2';

const url = new URL(process.argv[2]);
const n = Number(process.argv[3] || 100);
const session = http2.connect(url.origin);
session.on('error', e => {
  process.stderr.write(`h2_client: ${e}\n`);
  process.exit(1);
});

function post(message, sessionId) {
  return new Promise((resolve, reject) => {
    const headers = {
      ':method': 'POST',
      ':path': url.pathname,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (sessionId) {
      headers['mcp-session-id'] = sessionId;
      headers['mcp-protocol-version'] = '2025-11-25';
    }
    const req = session.request(headers);
    let head = {};
    let body = '';
    req.on('response', h => (head = h));
    req.setEncoding('utf8');
    req.on('data', chunk => (body += chunk));
    req.on('end', () => resolve({ status: head[':status'], headers: head, body }));
    req.on('error', reject);
    req.end(JSON.stringify(message));
  });
}

// The JSON-RPC answer (a message with an id) among an SSE body's data lines.
function answerOf(body) {
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    try {
      const message = JSON.parse(line.slice(6));
      if ('id' in message) return message;
    } catch {}
  }
  return null;
}

const init = await post({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'node-h2', version: '1' } },
});
const sid = init.headers['mcp-session-id'];
await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid);
const calls = [];
for (let i = 1; i <= n; i++) {
  const call = { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text: `call ${i}` } } };
  calls.push(post(call, sid));
}
const answers = await Promise.all(calls);
let answered = 0;
let sse = 0;
answers.forEach((r, i) => {
  if (String(r.headers['content-type'] || '').startsWith('text/event-stream')) sse++;
  const m = answerOf(r.body);
  if (r.status === 200 && m && m.id === i + 1 && m.result?.content?.[0]?.text === `call ${i + 1}`) answered++;
});
const protocol = session.alpnProtocol ?? null;
process.stdout.write(
  JSON.stringify({
    initStatus: init.status,
    protocol,
    session: typeof sid === 'string' && sid.length > 0,
    calls: n,
    answered,
    sse,
    mismatched: n - answered,
    nextStreamId: session.state.nextStreamID,
    maxConcurrentStreams: session.remoteSettings.maxConcurrentStreams,
  }) + '\n',
);
session.close();
