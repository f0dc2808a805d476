#!/usr/bin/env node
// ts2_server.mjs — an MCP server on the official TypeScript SDK v2 (@modelcontextprotocol/server
// 2.4.0), a third-party peer that serves both eras from one factory: tools `echo {text}` and
// `greet` (elicits a name: a server request in the handshake era, an input_required round in
// 2026-07-28).
//
//   node ts2_server.mjs                # stdio (serveStdio: the opening exchange picks the era)
//   node ts2_server.mjs --http PORT    # Streamable HTTP at http://127.0.0.1:PORT/mcp
//                                      # (createMcpHandler: 2026-07-28, stateless 2025 fallback)
//
// Over HTTP it prints `listening on http://127.0.0.1:PORT/mcp` on stderr once it listens.
// The SDK is loaded from MCP_TS2_DIR (see peers.env), by file.
import http from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdkDir =
  process.env.MCP_TS2_DIR || join(process.env.MCPWIRE_PEERS || join(homedir(), '.cache/mcp-peers'), 'npm2/node_modules');
const load = file => import(pathToFileURL(join(sdkDir, '@modelcontextprotocol/server/dist', file)).href);
const { McpServer, acceptedContent, createMcpHandler, fromJsonSchema, inputRequired } = await load('index.mjs');
const { serveStdio } = await load('stdio.mjs');

const factory = ({ era } = {}) => {
  const server = new McpServer({ name: 'ts2-fixture-server', version: '2.4.0' }, { capabilities: { tools: {} } });
  server.registerTool(
    'echo',
    {
      description: 'Echoes the text back',
      inputSchema: fromJsonSchema({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] })
    },
    async ({ text }) => ({ content: [{ type: 'text', text }] })
  );
  // The SDK's own split: an input_required round in the modern era, a request in the legacy one.
  const message = 'What is your name?';
  const requestedSchema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
  const noArguments = fromJsonSchema({ type: 'object', properties: {} });
  server.registerTool('greet', { description: 'Asks for a name, then greets', inputSchema: noArguments }, async (_args, ctx) => {
    let name;
    if (era === 'modern') {
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'name');
      if (!answer) return inputRequired({ inputRequests: { name: inputRequired.elicit({ message, requestedSchema }) } });
      name = answer.name;
    } else {
      const answer = await ctx.mcpReq.elicitInput({ message, requestedSchema });
      name = answer.action === 'accept' ? answer.content?.name : undefined;
    }
    return { content: [{ type: 'text', text: `Hello, ${name ?? 'whoever you are'}!` }] };
  });
  return server;
};

const argv = process.argv.slice(2);
if (argv.length === 0) {
  serveStdio(factory);
} else if (argv[0] === '--http' && argv.length === 2) {
  const handler = createMcpHandler(factory);
  const port = Number(argv[1]);
  // node:http to the handler's web-standard face (what @modelcontextprotocol/node's toNodeHandler does).
  http
    .createServer(async (req, res) => {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const body = ['GET', 'HEAD'].includes(req.method) ? undefined : Buffer.concat(chunks);
      const request = new Request(`http://127.0.0.1:${port}${req.url}`, { method: req.method, headers: req.headers, body });
      const response = await handler.fetch(request);
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) {
        for await (const chunk of response.body) res.write(chunk);
      }
      res.end();
    })
    .listen(port, '127.0.0.1', () => process.stderr.write(`listening on http://127.0.0.1:${port}/mcp\n`));
} else {
  process.stderr.write('usage: node ts2_server.mjs [--http PORT]\n');
  process.exit(2);
}
