// The mcp-bridge console: reads /ui/api/* for the upstreams and the catalog, and speaks MCP
// to the bridge's endpoint as a client does (initialize, then requests; answers as JSON or as
// server-sent events) to call tools, get prompts and read resources; follows /ui/api/traffic
// (server-sent events) for the calls of every client as they end, with p50/p99 latency per
// tool computed here; answers the server's elicitations in the page, completes prompt and
// template arguments as they are typed; lists the sessions, starts and stops their recording
// and downloads recordings (/ui/api/sessions, /ui/api/recording). Every text from a server
// goes into the page as text (textContent), never as markup.
'use strict';

const PROTOCOL_VERSION = '2025-11-25';
const endpoint = document.querySelector('meta[name="mcp-endpoint"]').content;
const $ = (id) => document.getElementById(id);

const state = { token: '', session: null, nextId: 1, catalog: null, selected: null };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'class') node.className = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function setStatus(text, isError) {
  const status = $('status');
  status.textContent = text;
  status.classList.toggle('error', !!isError);
}

function headers(extra) {
  const h = Object.assign({}, extra);
  if (state.token) h['Authorization'] = 'Bearer ' + state.token;
  return h;
}

async function api(path) {
  const response = await fetch(path, { headers: headers(), cache: 'no-store' });
  if (!response.ok) throw new Error(path + ': HTTP ' + response.status);
  return response.json();
}

// --- MCP over Streamable HTTP -------------------------------------------------------------

// The messages of an SSE body, as they arrive.
async function* sseMessages(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) yield JSON.parse(data);
    }
  }
}

async function post(message, onMessage, signal) {
  const h = headers({ 'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream' });
  if (state.session) h['Mcp-Session-Id'] = state.session;
  if (state.session) h['MCP-Protocol-Version'] = PROTOCOL_VERSION;
  const response = await fetch(endpoint, { method: 'POST', headers: h, body: JSON.stringify(message), signal });
  const session = response.headers.get('Mcp-Session-Id');
  if (session) state.session = session;
  if (response.status === 202) return null;
  if (!response.ok) {
    let detail = '';
    try { detail = (await response.json()).error.message; } catch (_) { /* not JSON */ }
    throw new Error('HTTP ' + response.status + (detail ? ': ' + detail : ''));
  }
  const type = response.headers.get('Content-Type') || '';
  if (type.startsWith('text/event-stream')) {
    for await (const msg of sseMessages(response)) {
      if (msg.id === message.id && ('result' in msg || 'error' in msg)) return msg;
      if (msg.method && 'id' in msg) answerServerRequest(msg);
      else if (onMessage) onMessage(msg);
    }
    throw new Error('the stream ended without an answer');
  }
  return response.json();
}

// A request's answer; `call.signal` aborts the wait (the caller then cancels the request).
async function request(method, params, onMessage, call) {
  const id = state.nextId++;
  if (call) call.id = id;
  const answer = await post({ jsonrpc: '2.0', id, method, params: params || {} }, onMessage, call && call.signal);
  if (answer.error) throw new Error(method + ': ' + answer.error.message + ' (' + answer.error.code + ')');
  return answer.result;
}

// A request the server makes of the page inside a call's stream: an elicitation in form mode
// is asked in the page; ping is answered; anything else is refused (the page offers nothing
// else). The answer is a POST of its own.
function answerServerRequest(msg) {
  const reply = (body) => post(Object.assign({ jsonrpc: '2.0', id: msg.id }, body))
    .catch((e) => setStatus('Answer not sent: ' + (e.message || e), true));
  if (msg.method === 'ping') { reply({ result: {} }); return; }
  const params = msg.params || {};
  if (msg.method === 'elicitation/create' && (params.mode === undefined || params.mode === 'form')) {
    askInPage(params, (result) => reply({ result }));
    return;
  }
  reply({ error: { code: -32601, message: 'the console does not answer ' + msg.method } });
}

let elicitationCount = 0;

// The form of an elicitation, in the result area: its message, a field per property of its
// requestedSchema, and Accept / Decline / Cancel; `answer` gets the ElicitResult.
function askInPage(params, answer) {
  const n = ++elicitationCount;
  const schema = params.requestedSchema || {};
  // The required fields first: the order of the others may not be the server's (a relay that
  // re-encodes the schema may sort its properties).
  const required = new Set(schema.required || []);
  const entries = Object.entries(schema.properties || {});
  const properties = Object.fromEntries([...entries.filter(([n]) => required.has(n)), ...entries.filter(([n]) => !required.has(n))]);
  const form = objectFields(Object.assign({}, schema, { properties }), true);
  const title = el('h4', { id: 'elicitation-' + n + '-title', text: 'The server asks: ' + (params.message || '') });
  const note = el('p', { class: 'field-error', role: 'alert' });
  const accept = el('button', { type: 'submit', text: 'Accept' });
  const decline = el('button', { type: 'button', text: 'Decline' });
  const cancel = el('button', { type: 'button', text: 'Cancel the question' });
  const node = el('form', { class: 'elicitation', novalidate: true, 'aria-labelledby': title.id, 'data-elicitation': 'asking' },
    title, ...form.nodes, el('div', { class: 'row' }, accept, decline, cancel), note);
  const done = (result) => {
    node.replaceChildren(el('p', { text: 'You answered the server: ' + result.action + '.' }));
    node.setAttribute('data-elicitation', result.action);
    answer(result);
  };
  node.addEventListener('submit', (event) => {
    event.preventDefault();
    const { value, errors } = form.read();
    if (errors.length) { note.textContent = 'Not sent: ' + errors.join('; '); return; }
    done({ action: 'accept', content: value });
  });
  decline.addEventListener('click', () => done({ action: 'decline' }));
  cancel.addEventListener('click', () => done({ action: 'cancel' }));
  $('result').append(node);
  setStatus('The server asks a question: answer it in the result area.');
  const first = node.querySelector('input, select, textarea, button');
  if (first) first.focus();
}

async function connectMcp() {
  state.session = null;
  await request('initialize', {
    protocolVersion: PROTOCOL_VERSION,
    // Form elicitation is answered in the page; URL elicitation is not offered.
    capabilities: { elicitation: { form: {} } },
    clientInfo: { name: 'mcp-bridge-console', version: '1' },
  });
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
}

// --- Upstreams and catalog ----------------------------------------------------------------

async function loadUpstreams() {
  const { upstreams } = await api('/ui/api/upstreams');
  const body = $('upstreams').querySelector('tbody');
  body.replaceChildren();
  for (const u of upstreams) {
    const stderr = u.stderr.length
      ? el('details', {}, el('summary', { text: u.stderr.length + ' lines' }), el('pre', { text: u.stderr.join('\n') }))
      : el('span', { text: '—' });
    body.append(el('tr', { 'data-server': u.name },
      el('th', { scope: 'row', text: u.name }),
      el('td', { class: 'state state-' + u.state, text: u.state }),
      el('td', { text: u.era || '—' }),
      el('td', { text: u.tools }), el('td', { text: u.prompts }), el('td', { text: u.resources }),
      el('td', { text: u.templates }), el('td', { text: u.restarts }),
      el('td', { text: u.error || '—' }),
      el('td', {}, stderr)));
  }
}

function describe(item) {
  return (item.title || item.name || '') + ' ' + (item.description || '');
}

function renderCatalog() {
  const query = $('search').value.trim().toLowerCase();
  const matches = (text) => !query || text.toLowerCase().includes(query);
  const fill = (listId, entries, key, nameOf) => {
    const list = $(listId);
    list.replaceChildren();
    for (const entry of entries) {
      const item = entry[key];
      const name = nameOf(item);
      if (!matches(name + ' ' + describe(item) + ' ' + (entry.server || ''))) continue;
      const button = el('button', { type: 'button', class: 'entry', 'data-name': name },
        el('span', { class: 'name', text: name }),
        el('span', { class: 'server', text: entry.server || '' }));
      button.addEventListener('click', () => select(key, item, name));
      list.append(el('li', {}, button, item.description ? el('p', { class: 'description', text: item.description }) : null));
    }
    if (!list.children.length) list.append(el('li', { class: 'none', text: 'none' }));
  };
  const c = state.catalog;
  fill('tools', c.tools, 'tool', (t) => t.name);
  fill('prompts', c.prompts, 'prompt', (p) => p.name);
  fill('resources', c.resources, 'resource', (r) => r.uri);
  fill('templates', c.resourceTemplates, 'resourceTemplate', (t) => t.uriTemplate);
}

async function loadCatalog() {
  state.catalog = await api('/ui/api/catalog');
  renderCatalog();
}

// --- Forms from JSON Schema ---------------------------------------------------------------

let fieldCount = 0;

// The choices a schema offers, as [{ value, text }]: its `enum` (named by the legacy
// `enumNames` when present) or its `oneOf` / `anyOf` of `const`s (named by their `title`);
// null when it offers none.
function choices(schema) {
  if (!schema) return null;
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return schema.enum.map((v, i) => ({ value: v, text: String(names[i] ?? v) }));
  }
  const list = schema.oneOf || schema.anyOf;
  if (Array.isArray(list) && list.length && list.every((o) => o && typeof o === 'object' && 'const' in o)) {
    return list.map((o) => ({ value: o.const, text: String(o.title ?? o.const) }));
  }
  return null;
}

// The input type for a string of JSON Schema `format`.
const INPUT_TYPES = { email: 'email', uri: 'url', date: 'date' };

// A field for `schema`: { node, read() -> { value, errors } } (value undefined: left empty).
// `key` (default: the label) names it in `data-field`.
function field(schema, label, required, key) {
  schema = schema || {};
  key = key ?? label;
  const id = 'f' + (++fieldCount);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  const labelText = label + (required ? ' (required)' : '');
  const help = schema.description ? el('small', { id: id + '-help', class: 'help', text: schema.description }) : null;
  const message = el('span', { id: id + '-error', class: 'field-error', role: 'alert' });
  const describedBy = (help ? id + '-help ' : '') + id + '-error';
  const wrap = (control) => el('div', { class: 'field' }, el('label', { for: id, text: labelText }), control, help, message);
  const finish = (errors) => { message.textContent = errors.join('; '); return errors; };

  const options = choices(schema);
  if (options) {
    const select = el('select', { id, 'aria-describedby': describedBy, 'data-field': key });
    select.append(el('option', { value: '', text: required ? '— choose —' : '(none)' }));
    options.forEach((o, i) => select.append(el('option', { value: String(i), text: o.text })));
    if (schema.default !== undefined) {
      const i = options.findIndex((o) => o.value === schema.default);
      if (i >= 0) select.value = String(i);
    }
    return { node: wrap(select), read() {
      const value = select.value === '' ? undefined : options[Number(select.value)].value;
      return { value, errors: finish(required && value === undefined ? [label + ' is required'] : []) };
    } };
  }
  if (type === 'boolean') {
    const box = el('input', { id, type: 'checkbox', 'aria-describedby': describedBy, 'data-field': key });
    box.checked = schema.default === true;
    return { node: el('div', { class: 'field checkbox' }, box, el('label', { for: id, text: labelText }), help, message),
      read() { finish([]); return { value: box.checked, errors: [] }; } };
  }
  if (type === 'number' || type === 'integer') {
    const input = el('input', { id, type: 'number', step: type === 'integer' ? '1' : 'any', 'aria-describedby': describedBy, 'data-field': key });
    if (schema.default !== undefined) input.value = String(schema.default);
    return { node: wrap(input), read() {
      const text = input.value.trim();
      if (!text) return { value: undefined, errors: finish(required ? [label + ' is required'] : []) };
      const value = Number(text);
      const errors = [];
      if (!Number.isFinite(value)) errors.push(label + ' must be a number');
      else if (type === 'integer' && !Number.isInteger(value)) errors.push(label + ' must be a whole number');
      if (schema.minimum !== undefined && value < schema.minimum) errors.push(label + ' must be at least ' + schema.minimum);
      if (schema.maximum !== undefined && value > schema.maximum) errors.push(label + ' must be at most ' + schema.maximum);
      return { value, errors: finish(errors) };
    } };
  }
  const itemChoices = type === 'array' ? choices(schema.items) : null;
  if (itemChoices) {
    // A multiple choice: one checkbox per choice.
    const boxes = itemChoices.map((o, i) => {
      const box = el('input', { id: id + '-' + i, type: 'checkbox', 'data-field': key + ': ' + o.text });
      box.checked = Array.isArray(schema.default) && schema.default.includes(o.value);
      return box;
    });
    const fieldset = el('fieldset', { id, 'data-field': key, 'aria-describedby': describedBy }, el('legend', { text: labelText }), help,
      ...boxes.map((box, i) => el('div', { class: 'field checkbox' }, box, el('label', { for: box.id, text: itemChoices[i].text }))), message);
    return { node: fieldset, read() {
      const value = itemChoices.filter((_, i) => boxes[i].checked).map((o) => o.value);
      const errors = [];
      if (required && !value.length) errors.push(label + ' is required');
      if (schema.minItems !== undefined && value.length < schema.minItems) errors.push(label + ' needs at least ' + schema.minItems + ' choices');
      if (schema.maxItems !== undefined && value.length > schema.maxItems) errors.push(label + ' takes at most ' + schema.maxItems + ' choices');
      return { value: value.length || required ? value : undefined, errors: finish(errors) };
    } };
  }
  if (type === 'array') {
    const items = [];
    const list = el('div', { class: 'items' });
    const add = el('button', { type: 'button', class: 'add', text: 'Add ' + label + ' item' });
    const addItem = () => {
      const sub = field(schema.items, label + ' item ' + (items.length + 1), true);
      const remove = el('button', { type: 'button', class: 'remove', text: 'Remove ' + label + ' item ' + (items.length + 1) });
      const row = el('div', { class: 'item' }, sub.node, remove);
      const entry = { sub, row };
      remove.addEventListener('click', () => { items.splice(items.indexOf(entry), 1); row.remove(); });
      items.push(entry);
      list.append(row);
    };
    add.addEventListener('click', addItem);
    const fieldset = el('fieldset', { id, 'data-field': key }, el('legend', { text: labelText }), help, list, add, message);
    return { node: fieldset, read() {
      const results = items.map((i) => i.sub.read());
      const value = results.map((r) => r.value).filter((v) => v !== undefined);
      const own = [];
      if (schema.minItems !== undefined && value.length < schema.minItems) own.push(label + ' needs at least ' + schema.minItems + ' items');
      finish(own);
      return { value: items.length || required ? value : undefined, errors: results.flatMap((r) => r.errors).concat(own) };
    } };
  }
  if (type === 'object' || schema.properties) {
    const sub = objectFields(schema);
    const fieldset = el('fieldset', { id, 'data-field': key }, el('legend', { text: labelText }), help, ...sub.nodes, message);
    return { node: fieldset, read() {
      const { value, errors } = sub.read();
      const empty = Object.keys(value).length === 0;
      return { value: empty && !required ? undefined : value, errors };
    } };
  }
  if (type === 'string') {
    const input = el('input', { id, type: INPUT_TYPES[schema.format] || 'text', 'aria-describedby': describedBy, 'data-field': key });
    if (schema.default !== undefined) input.value = String(schema.default);
    return { node: wrap(input), input, read() {
      const value = input.value;
      if (!value) return { value: undefined, errors: finish(required ? [label + ' is required'] : []) };
      const errors = [];
      if (schema.format === 'email' && !/^[^@\s]+@[^@\s]+$/.test(value)) errors.push(label + ' must be an email address');
      if (schema.format === 'uri') {
        try { new URL(value); } catch (_) { errors.push(label + ' must be a URI'); }
      }
      if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(label + ' needs at least ' + schema.minLength + ' characters');
      if (schema.maxLength !== undefined && value.length > schema.maxLength) errors.push(label + ' takes at most ' + schema.maxLength + ' characters');
      if (schema.pattern) {
        try { if (!new RegExp(schema.pattern, 'u').test(value)) errors.push(label + ' must match ' + schema.pattern); } catch (_) { /* a pattern JS cannot read is the server's to check */ }
      }
      return { value, errors: finish(errors) };
    } };
  }
  // Anything else: JSON typed in.
  const area = el('textarea', { id, rows: 3, 'aria-describedby': describedBy, 'data-field': key });
  if (schema.default !== undefined) area.value = JSON.stringify(schema.default);
  return { node: wrap(area), read() {
    const text = area.value.trim();
    if (!text) return { value: undefined, errors: finish(required ? [label + ' is required'] : []) };
    try { return { value: JSON.parse(text), errors: finish([]) }; } catch (e) { return { value: undefined, errors: finish([label + ' is not valid JSON']) }; }
  } };
}

// The fields of an object schema's properties, labelled by their names (or, with `titled`, by
// their titles where they have one).
function objectFields(schema, titled) {
  const required = new Set(schema.required || []);
  const fields = Object.entries(schema.properties || {}).map(([name, sub]) =>
    [name, field(sub, (titled && sub && sub.title) || name, required.has(name), name)]);
  return {
    nodes: fields.map(([, f]) => f.node),
    fields: new Map(fields),
    read() {
      const value = {};
      const errors = [];
      for (const [name, f] of fields) {
        const r = f.read();
        errors.push(...r.errors);
        if (r.value !== undefined) value[name] = r.value;
      }
      return { value, errors };
    },
  };
}

// --- The playground -----------------------------------------------------------------------

function select(kind, item, name) {
  state.selected = { kind, item, name };
  const selected = $('selected');
  selected.replaceChildren(
    el('h3', { text: { tool: 'Tool ', prompt: 'Prompt ', resource: 'Resource ', resourceTemplate: 'Template ' }[kind] + name }),
    item.description ? el('p', { text: item.description }) : null);
  if (item.annotations) selected.append(el('p', { class: 'annotations', text: 'Annotations: ' + JSON.stringify(item.annotations) }));
  const fields = $('fields');
  fields.replaceChildren();
  let form;
  if (kind === 'tool') {
    form = objectFields(item.inputSchema || {});
    selected.append(el('details', {}, el('summary', { text: 'Input schema' }), el('pre', { text: JSON.stringify(item.inputSchema, null, 2) })));
  } else if (kind === 'prompt') {
    const properties = {};
    const required = [];
    for (const a of item.arguments || []) {
      properties[a.name] = { type: 'string', description: a.description };
      if (a.required) required.push(a.name);
    }
    form = objectFields({ properties, required });
  } else if (kind === 'resourceTemplate') {
    const names = [...item.uriTemplate.matchAll(/\{[+#./;?&]?([^}]+)\}/g)].flatMap((m) => m[1].split(',').map((n) => n.replace(/[*]|:\d+$/g, '')));
    const properties = Object.fromEntries(names.map((n) => [n, { type: 'string' }]));
    form = objectFields({ properties, required: names });
  } else {
    form = objectFields({});
  }
  fields.append(...form.nodes);
  if (kind === 'prompt') completeOn(form, { type: 'ref/prompt', name });
  if (kind === 'resourceTemplate') completeOn(form, { type: 'ref/resource', uri: item.uriTemplate });
  state.form = form;
  $('send').textContent = { tool: 'Call', prompt: 'Get', resource: 'Read', resourceTemplate: 'Read' }[kind];
  $('playground').hidden = false;
  $('result').removeAttribute('data-done');
  $('result').replaceChildren();
}

// Completion on the text fields of `form` (a prompt's arguments, a template's variables; `ref`
// names which): on focus and as the user types, completion/complete with the other fields'
// values as context; the values offered are buttons under the field (ArrowDown reaches them,
// ArrowUp / ArrowDown move among them, Escape goes back), and the one picked fills the field.
// A server that completes nothing (or refuses) shows no suggestion.
function completeOn(form, ref) {
  for (const [name, f] of form.fields) {
    if (!f.input) continue;
    const input = f.input;
    const list = el('div', { class: 'suggestions', role: 'group', 'aria-label': 'Suggestions for ' + name, hidden: true });
    input.insertAdjacentElement('afterend', list);
    let asked = 0;
    let picked = false;
    const hide = () => { list.hidden = true; list.replaceChildren(); };
    const ask = async () => {
      const n = ++asked;
      const others = {};
      for (const [other, g] of form.fields) if (other !== name && g.input && g.input.value) others[other] = g.input.value;
      let values = [];
      try {
        const result = await request('completion/complete', { ref, argument: { name, value: input.value }, context: { arguments: others } });
        values = (result && result.completion && result.completion.values) || [];
      } catch (_) { /* no completion here: no suggestion */ }
      if (n !== asked) return; // a later keystroke asked since: its answer is the one shown
      list.replaceChildren(...values.slice(0, 20).map((value) => {
        const button = el('button', { type: 'button', class: 'suggestion', text: value });
        button.addEventListener('click', () => { input.value = value; hide(); picked = true; input.focus(); });
        return button;
      }));
      list.hidden = !values.length;
    };
    input.addEventListener('input', ask);
    input.addEventListener('focus', () => { if (picked) picked = false; else ask(); });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' && !list.hidden && list.firstElementChild) { e.preventDefault(); list.firstElementChild.focus(); }
      if (e.key === 'Escape') hide();
    });
    list.addEventListener('keydown', (e) => {
      const at = document.activeElement;
      if (e.key === 'ArrowDown' && at.nextElementSibling) { e.preventDefault(); at.nextElementSibling.focus(); }
      if (e.key === 'ArrowUp') { e.preventDefault(); (at.previousElementSibling || input).focus(); }
      if (e.key === 'Escape') { e.preventDefault(); hide(); picked = true; input.focus(); }
    });
  }
}

function expandTemplate(template, values) {
  return template.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_, op, names) => {
    const parts = names.split(',').map((n) => n.replace(/[*]|:\d+$/g, '')).map((n) => values[n] ?? '');
    const encode = op === '+' || op === '#' ? encodeURI : encodeURIComponent;
    const joined = parts.map(encode).join(',');
    return op && op !== '+' ? op + joined : joined;
  });
}

function tree(value) {
  if (value === null || typeof value !== 'object') return el('span', { class: 'leaf', text: JSON.stringify(value) });
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  return el('ul', { class: 'tree' }, ...entries.map(([k, v]) =>
    el('li', {}, el('span', { class: 'key', text: k + ': ' }), tree(v))));
}

function resourceContents(contents) {
  const head = el('p', { class: 'uri', text: contents.uri + (contents.mimeType ? ' (' + contents.mimeType + ')' : '') });
  if (typeof contents.text === 'string') return el('div', { class: 'contents' }, head, el('pre', { text: contents.text }));
  if (typeof contents.blob === 'string') {
    if ((contents.mimeType || '').startsWith('image/')) return el('div', { class: 'contents' }, head, el('img', { alt: contents.uri, src: 'data:' + contents.mimeType + ';base64,' + contents.blob }));
    return el('div', { class: 'contents' }, head, el('p', { text: 'binary, ' + contents.blob.length + ' characters of base64' }));
  }
  return el('div', { class: 'contents' }, head, tree(contents));
}

function contentBlock(block) {
  switch (block.type) {
    case 'text': return el('pre', { class: 'content text', text: block.text });
    case 'image': return el('img', { class: 'content image', alt: 'image (' + block.mimeType + ')', src: 'data:' + block.mimeType + ';base64,' + block.data });
    case 'audio': return el('audio', { class: 'content audio', controls: true, 'aria-label': 'audio (' + block.mimeType + ')', src: 'data:' + block.mimeType + ';base64,' + block.data });
    case 'resource_link': return el('p', { class: 'content link', text: 'Resource link: ' + block.uri + (block.name ? ' (' + block.name + ')' : '') });
    case 'resource': return el('div', { class: 'content resource' }, resourceContents(block.resource));
    default: return el('div', { class: 'content other' }, tree(block));
  }
}

function showResult(result, kind) {
  const out = $('result');
  out.replaceChildren();
  if (kind === 'tool') {
    if (result.isError) out.append(el('p', { class: 'error', text: 'The tool answered with an error.' }));
    for (const block of result.content || []) out.append(contentBlock(block));
    if (result.structuredContent !== undefined) out.append(el('h4', { text: 'Structured content' }), tree(result.structuredContent));
  } else if (kind === 'prompt') {
    if (result.description) out.append(el('p', { text: result.description }));
    for (const m of result.messages || []) out.append(el('div', { class: 'message' }, el('h4', { text: m.role }), contentBlock(m.content)));
  } else {
    for (const c of result.contents || []) out.append(resourceContents(c));
  }
  out.setAttribute('data-done', 'answered');
}

async function send(event) {
  event.preventDefault();
  const { kind, item, name } = state.selected;
  const { value, errors } = state.form.read();
  if (errors.length) {
    setStatus('Not sent: ' + errors.join('; '), true);
    return;
  }
  const out = $('result');
  out.removeAttribute('data-done');
  out.replaceChildren(el('p', { text: 'Waiting for the answer…' }));
  const progress = el('progress', { 'aria-label': 'progress' });
  // Cancel: stop waiting, and tell the bridge (notifications/cancelled), which tells the server.
  const controller = new AbortController();
  const call = { signal: controller.signal, id: null };
  const cancel = el('button', { type: 'button', id: 'cancel', text: 'Cancel' });
  cancel.addEventListener('click', () => {
    controller.abort();
    if (call.id !== null) {
      post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: call.id, reason: 'cancelled in the console' } })
        .catch((e) => setStatus('Cancel not sent: ' + (e.message || e), true));
    }
  });
  out.append(cancel);
  const onMessage = (msg) => {
    if (msg.method === 'notifications/progress' && msg.params) {
      if (!progress.isConnected) out.append(progress);
      if (msg.params.total) progress.max = msg.params.total;
      progress.value = msg.params.progress;
      progress.setAttribute('data-progress', String(msg.params.progress));
    }
  };
  try {
    let result;
    if (kind === 'tool') {
      result = await request('tools/call', { name, arguments: value, _meta: { progressToken: 'console-' + state.nextId } }, onMessage, call);
    } else if (kind === 'prompt') {
      result = await request('prompts/get', { name, arguments: value }, onMessage, call);
    } else {
      const uri = kind === 'resourceTemplate' ? expandTemplate(item.uriTemplate, value) : name;
      result = await request('resources/read', { uri }, onMessage, call);
    }
    showResult(result, kind);
    setStatus('Answered: ' + name);
  } catch (e) {
    if (controller.signal.aborted) {
      out.replaceChildren(el('p', { text: 'Cancelled.' }));
      out.setAttribute('data-done', 'cancelled');
      setStatus('Cancelled: ' + name);
      return;
    }
    out.replaceChildren(el('p', { class: 'error', text: String(e.message || e) }));
    out.setAttribute('data-done', 'failed');
    setStatus('Failed: ' + (e.message || e), true);
  }
}

// --- Live traffic -------------------------------------------------------------------------

// The last calls seen (newest first), and markers where the page fell behind and lost some.
const traffic = { items: [], keep: 500, abort: null, servers: new Set(), pending: false };

async function listenTraffic() {
  if (traffic.abort) traffic.abort.abort();
  const abort = new AbortController();
  traffic.abort = abort;
  const status = $('traffic-status');
  try {
    const response = await fetch('/ui/api/traffic', { headers: headers(), cache: 'no-store', signal: abort.signal });
    if (!response.ok) throw new Error('HTTP ' + response.status);
    status.textContent = 'Listening: calls appear as they end.';
    status.classList.remove('error');
    document.body.setAttribute('data-traffic', 'listening');
    for await (const item of sseMessages(response)) addTraffic(item);
    status.textContent = 'The traffic stream ended (reconnect to listen again).';
  } catch (e) {
    if (abort.signal.aborted) return;
    status.textContent = 'Traffic not available: ' + (e.message || e);
    status.classList.add('error');
  }
  document.body.removeAttribute('data-traffic');
}

function addTraffic(item) {
  traffic.items.unshift(item);
  if (traffic.items.length > traffic.keep) traffic.items.length = traffic.keep;
  if (item.kind === 'call' && item.server && !traffic.servers.has(item.server)) {
    traffic.servers.add(item.server);
    $('traffic-server').append(el('option', { value: item.server, text: item.server }));
  }
  // One redraw per frame however many events arrive meanwhile.
  if (!traffic.pending) {
    traffic.pending = true;
    requestAnimationFrame(() => { traffic.pending = false; renderTraffic(); });
  }
}

// What a row names: the tool (or prompt, URI) and, for other methods than tools/call, the method.
function trafficLabel(call) {
  if (call.method === 'tools/call') return call.name;
  return call.name ? call.method + ' ' + call.name : call.method;
}

function trafficShown() {
  const server = $('traffic-server').value;
  const name = $('traffic-name').value.trim().toLowerCase();
  const outcome = $('traffic-outcome').value;
  return traffic.items.filter((item) => item.kind !== 'call' || (
    (!server || item.server === server)
    && (!name || trafficLabel(item).toLowerCase().includes(name))
    && (!outcome || item.outcome === outcome)));
}

// The p-th percentile of sorted `values` (nearest rank).
function percentile(sorted, p) {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

function ms(value) {
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

function renderTraffic() {
  const shown = trafficShown();
  const body = $('traffic').querySelector('tbody');
  body.replaceChildren(...shown.map((item) => {
    if (item.kind !== 'call') {
      return el('tr', { class: 'dropped' }, el('td', { colspan: 7, text: item.count + ' calls not shown: the page fell behind' }));
    }
    return el('tr', { 'data-server': item.server || '', 'data-name': item.name, 'data-outcome': item.outcome },
      el('td', { text: (item.time || '').slice(11, 23) }),
      el('td', { text: item.caller || '—' }),
      el('td', { text: item.session === null || item.session === undefined ? '—' : String(item.session) }),
      el('td', { text: item.server || '—' }),
      el('td', { text: trafficLabel(item) }),
      el('td', { class: 'outcome-' + item.outcome, text: item.outcome }),
      el('td', { text: ms(item.latencyMs) }));
  }));
  renderLatency(shown.filter((item) => item.kind === 'call'));
}

// p50 and p99 per tool over `calls`, and per minute as a small chart.
function renderLatency(calls) {
  const groups = new Map();
  for (const call of calls) {
    const key = (call.server || '') + '\n' + trafficLabel(call);
    if (!groups.has(key)) groups.set(key, { server: call.server, label: trafficLabel(call), calls: [] });
    groups.get(key).calls.push(call);
  }
  const body = $('latency').querySelector('tbody');
  body.replaceChildren(...[...groups.values()].sort((a, b) => (a.server || '').localeCompare(b.server || '') || a.label.localeCompare(b.label)).map((group) => {
    const sorted = group.calls.map((c) => c.latencyMs).sort((a, b) => a - b);
    const failed = group.calls.filter((c) => c.outcome !== 'ok').length;
    return el('tr', { 'data-server': group.server || '', 'data-name': group.label },
      el('th', { scope: 'row', text: group.server || '—' }),
      el('td', { text: group.label }),
      el('td', { class: 'calls', text: String(sorted.length) }),
      el('td', { text: String(failed) }),
      el('td', { class: 'p50', text: ms(percentile(sorted, 50)) }),
      el('td', { class: 'p99', text: ms(percentile(sorted, 99)) }),
      el('td', {}, chart(group)));
  }));
}

// The SVG namespace, as the HTML parser gave it to the page's chart template.
function svg(tag, attrs) {
  const namespace = $('chart-template').content.firstElementChild.namespaceURI;
  const node = document.createElementNS(namespace, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

// p50 and p99 of each minute of `group`'s calls (the last 30 minutes with calls), as lines.
function chart(group) {
  const minutes = new Map();
  for (const call of group.calls) {
    const minute = (call.time || '').slice(0, 16);
    if (!minutes.has(minute)) minutes.set(minute, []);
    minutes.get(minute).push(call.latencyMs);
  }
  const points = [...minutes.keys()].sort().slice(-30).map((minute) => {
    const sorted = minutes.get(minute).sort((a, b) => a - b);
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  });
  const [width, height] = [120, 25];
  const top = Math.max(...points.map((p) => p.p99), 0.001);
  const x = (i) => (points.length === 1 ? width / 2 : (i * width) / (points.length - 1));
  const y = (v) => height - 2 - (v / top) * (height - 4);
  const line = (key) => points.map((p, i) => x(i).toFixed(1) + ',' + y(p[key]).toFixed(1)).join(' ');
  const label = 'p50 and p99 latency per minute of ' + group.label + ', up to ' + ms(top) + ' ms';
  const node = svg('svg', { class: 'chart', viewBox: '0 0 ' + width + ' ' + height, role: 'img', 'aria-label': label });
  const title = svg('title', {});
  title.textContent = label;
  node.append(title);
  if (points.length === 1) {
    node.append(svg('circle', { class: 'p50', cx: x(0), cy: y(points[0].p50), r: 1.5 }));
    node.append(svg('circle', { class: 'p99', cx: x(0), cy: y(points[0].p99), r: 1.5 }));
  } else {
    node.append(svg('polyline', { class: 'p50', points: line('p50') }));
    node.append(svg('polyline', { class: 'p99', points: line('p99') }));
  }
  return node;
}

// --- Sessions and recordings -------------------------------------------------------------

async function loadSessions() {
  const { sessions, recordings } = await api('/ui/api/sessions');
  $('sessions').querySelector('tbody').replaceChildren(...sessions.map((s) => {
    const client = s.client ? (s.client.name || '?') + ' ' + (s.client.version || '') : '—';
    const recording = s.recording !== null && s.recording !== undefined;
    const button = el('button', { type: 'button', text: (recording ? 'Stop recording session ' : 'Record session ') + s.number });
    button.addEventListener('click', () => switchRecording(s.number, recording ? 'stop' : 'start'));
    return el('tr', { 'data-session': s.number, 'data-client': s.client ? s.client.name : '', 'data-recording': recording ? 'true' : 'false' },
      el('th', { scope: 'row', text: String(s.number) }),
      el('td', { text: client }),
      el('td', { text: s.carrier }),
      el('td', { text: (s.opened || '').slice(11, 23) }),
      el('td', {}, recording ? el('span', { text: 'recording ' + s.recording + ' ' }) : null, button));
  }));
  $('recordings').querySelector('tbody').replaceChildren(...recordings.map((r) => {
    const button = el('button', { type: 'button', text: 'Download recording ' + r.number });
    button.addEventListener('click', () => downloadRecording(r.number, r.file).catch((e) => setStatus('Not downloaded: ' + (e.message || e), true)));
    return el('tr', { 'data-recording': r.number, 'data-stopped': r.stopped ? 'true' : 'false' },
      el('th', { scope: 'row', text: String(r.number) }),
      el('td', { text: String(r.session) }),
      el('td', { text: r.file || '—' }),
      el('td', { text: (r.started || '').slice(11, 23) }),
      el('td', { text: r.stopped ? r.stopped.slice(11, 23) : 'recording' }),
      el('td', { text: r.bytes === null || r.bytes === undefined ? '—' : String(r.bytes) }),
      el('td', {}, button));
  }));
}

async function switchRecording(session, action) {
  try {
    const response = await fetch('/ui/api/recording', {
      method: 'POST',
      headers: headers({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ session, action }),
      cache: 'no-store',
    });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || 'HTTP ' + response.status);
    setStatus(action === 'start' ? 'Recording session ' + session + ' (recording ' + answer.recording + ').' : 'Stopped recording session ' + session + '.');
  } catch (e) {
    setStatus('Recording not switched: ' + (e.message || e), true);
  }
  await loadSessions().catch((e) => setStatus(String(e.message || e), true));
}

// Fetched with the token (a plain link would go without it), then saved from memory.
async function downloadRecording(number, file) {
  const response = await fetch('/ui/api/recording?number=' + encodeURIComponent(number), { headers: headers(), cache: 'no-store' });
  if (!response.ok) throw new Error('HTTP ' + response.status);
  const url = URL.createObjectURL(await response.blob());
  const link = el('a', { href: url, download: file || 'recording.jsonl', hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setStatus('Downloaded recording ' + number + '.');
  // The memory is let go well after the download took the URL.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

async function connect(event) {
  if (event) event.preventDefault();
  state.token = $('token').value;
  setStatus('Connecting…');
  try {
    await Promise.all([loadUpstreams(), loadCatalog()]);
    await connectMcp();
    await loadSessions();
    setStatus('Connected.');
    document.body.setAttribute('data-connected', 'true');
    listenTraffic();
  } catch (e) {
    setStatus('Cannot connect: ' + (e.message || e), true);
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('connect').addEventListener('submit', connect);
  $('refresh').addEventListener('click', () => loadUpstreams().catch((e) => setStatus(String(e.message || e), true)));
  $('search').addEventListener('input', () => { if (state.catalog) renderCatalog(); });
  $('playground').addEventListener('submit', (e) => { send(e); });
  for (const id of ['traffic-server', 'traffic-outcome']) $(id).addEventListener('change', renderTraffic);
  $('traffic-name').addEventListener('input', renderTraffic);
  $('sessions-refresh').addEventListener('click', () => loadSessions().catch((e) => setStatus(String(e.message || e), true)));
  $('traffic-clear').addEventListener('click', () => { traffic.items = []; renderTraffic(); });
  connect();
});
