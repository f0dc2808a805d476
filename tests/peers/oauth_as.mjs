#!/usr/bin/env node
// oauth_as.mjs — a real OAuth 2.0 authorization server for the resource-server tests:
// oauth2-mock-server (npm, pinned by scripts/install-peers) behind a thin wrapper.
//
//   node oauth_as.mjs
//
// Prints one JSON line {"issuer","jwks_uri","introspection_endpoint","authorization_endpoint",
// "token_endpoint"} once listening on 127.0.0.1 (a free port), then serves until stdin closes.
//
// What oauth2-mock-server does: RFC 8414/OIDC discovery (/.well-known/openid-configuration),
// GET /authorize (no login: it redirects straight back with a code, so a test can follow the
// redirect instead of a browser), POST /token (authorization_code with PKCE S256 checked,
// refresh_token, client_credentials), GET /jwks; access tokens are RS256 JWTs signed with a key
// generated at start.
// What the wrapper adds, through the mock's own hooks:
//   - RFC 8707: the `resource` of the authorization request (or of a client_credentials token
//     request) becomes the access token's `aud`; the scope asked at /authorize becomes its
//     `scope`; `client_id` is set. A refresh keeps the grant's `aud`, `scope` and `client_id`
//     (the mock alone would drop them), as an authorization server does.
//   - POST /introspect (RFC 7662) for real: HTTP Basic client authentication as the resource
//     server (env OAUTH_RS_CLIENT_ID / OAUTH_RS_CLIENT_SECRET, default rs / rs-secret; else
//     401), the token's signature and expiry checked with jose against the issuer's own keys,
//     {"active":false} for anything else.
//   - Test-only: POST /test/mint {claims, expiresIn, key: "issuer"|"rogue", tamper} signs a token
//     (with the issuer's key, or with a "rogue" key whose kid the JWKS does not hold; tamper
//     changes the payload after signing); GET /test/stats gives {"jwks": N, "introspections": N,
//     "secrets": [...]}: the JWKS fetches, the introspection requests, and every access token, refresh token and authorization code handed out (so a
//     test can check that none of them shows in a log); POST /test/jwks-cache-control {value}
//     makes GET /jwks answer with that Cache-Control header (null: none).
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dir =
  process.env.MCP_OAUTH_AS_DIR ||
  join(process.env.MCPWIRE_PEERS || join(homedir(), '.cache/mcp-peers'), 'oauth/node_modules');
const require = createRequire(join(dir, 'noop.js'));
const { OAuth2Issuer, OAuth2Service } = await import(pathToFileURL(require.resolve('oauth2-mock-server')).href);
const jose = await import(pathToFileURL(createRequire(require.resolve('oauth2-mock-server')).resolve('jose')).href);

const RS_ID = process.env.OAUTH_RS_CLIENT_ID || 'rs';
const RS_SECRET = process.env.OAUTH_RS_CLIENT_SECRET || 'rs-secret';

const issuer = new OAuth2Issuer();
await issuer.keys.generate('RS256', { kid: 'issuer-key-1' });
const service = new OAuth2Service(issuer);
const rogue = await jose.generateKeyPair('RS256');

// code -> {scope, resource, client_id} from the authorization request.
const grants = new Map();
// refresh token -> the grant it continues.
const refreshGrants = new Map();
const grantOf = body => (body.code ? grants.get(body.code) : body.refresh_token ? refreshGrants.get(body.refresh_token) : undefined);
service.on('beforeAuthorizeRedirect', (redirect, req) => {
  const query = new URL(req.url, 'http://x').searchParams;
  const code = redirect.url.searchParams.get('code');
  if (code) {
    grants.set(code, { scope: query.get('scope'), resource: query.get('resource'), client_id: query.get('client_id') });
  }
});
service.on('beforeTokenSigning', (token, req) => {
  const body = req.body || {};
  const grant = grantOf(body);
  const resource = grant?.resource ?? body.resource ?? body.aud;
  if (resource) token.payload.aud = resource;
  const scope = grant?.scope ?? body.scope;
  if (scope) token.payload.scope = scope;
  const clientId = grant?.client_id ?? body.client_id;
  if (clientId) token.payload.client_id = clientId;
  if (body.grant_type === 'client_credentials' && clientId) token.payload.sub = clientId;
});
let jwksFetches = 0;
let jwksCacheControl = null;
const secrets = [];
service.on('beforeResponse', (response, req) => {
  const grant = grantOf(req.body || {});
  if (grant?.scope) response.body.scope = grant.scope;
  if (grant && response.body.refresh_token) refreshGrants.set(response.body.refresh_token, grant);
  for (const key of ['access_token', 'refresh_token', 'id_token']) if (response.body[key]) secrets.push(response.body[key]);
});
service.on('beforeAuthorizeRedirect', redirect => {
  const code = redirect.url.searchParams.get('code');
  if (code) secrets.push(code);
});

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

let introspections = 0;
async function introspect(req, res) {
  introspections += 1;
  const auth = req.headers.authorization || '';
  const expected = 'Basic ' + Buffer.from(`${encodeURIComponent(RS_ID)}:${encodeURIComponent(RS_SECRET)}`).toString('base64');
  if (auth !== expected) {
    res.writeHead(401, { 'www-authenticate': 'Basic realm="introspection"' });
    return res.end();
  }
  const form = new URLSearchParams(await readBody(req));
  const token = form.get('token') || '';
  try {
    const keys = jose.createLocalJWKSet({ keys: issuer.keys.toJSON() });
    const { payload } = await jose.jwtVerify(token, keys, { issuer: issuer.url });
    return json(res, 200, { active: true, token_type: 'Bearer', ...payload });
  } catch {
    return json(res, 200, { active: false });
  }
}

async function mint(req, res) {
  const spec = JSON.parse((await readBody(req)) || '{}');
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: issuer.url, iat: now, nbf: now - 10, exp: now + (spec.expiresIn ?? 3600), ...spec.claims };
  let token;
  if (spec.key === 'rogue') {
    token = await new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: 'rogue-key' }).sign(rogue.privateKey);
  } else {
    const key = issuer.keys.get('issuer-key-1');
    token = await new jose.SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid })
      .sign(await jose.importJWK(key));
  }
  if (spec.tamper) {
    const [h, , s] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ ...claims, scope: 'everything' })).toString('base64url');
    token = `${h}.${forged}.${s}`;
  }
  secrets.push(token);
  return json(res, 200, { access_token: token });
}

const server = createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  const fail = e => json(res, 500, { error: 'server_error', error_description: String(e) });
  if (req.method === 'POST' && path === '/introspect') return void introspect(req, res).catch(fail);
  if (req.method === 'POST' && path === '/test/mint') return void mint(req, res).catch(fail);
  if (req.method === 'GET' && path === '/test/stats') return json(res, 200, { jwks: jwksFetches, introspections, secrets });
  if (req.method === 'POST' && path === '/test/jwks-cache-control') {
    return void readBody(req)
      .then(body => {
        jwksCacheControl = JSON.parse(body).value ?? null;
        json(res, 200, {});
      })
      .catch(fail);
  }
  if (req.method === 'GET' && path === '/jwks') {
    jwksFetches += 1;
    if (jwksCacheControl !== null) res.setHeader('cache-control', jwksCacheControl);
  }
  return service.requestHandler(req, res);
});
server.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  issuer.url = base;
  process.stdout.write(
    JSON.stringify({
      issuer: base,
      jwks_uri: `${base}/jwks`,
      introspection_endpoint: `${base}/introspect`,
      authorization_endpoint: `${base}/authorize`,
      token_endpoint: `${base}/token`,
    }) + '\n',
  );
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
