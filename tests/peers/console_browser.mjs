#!/usr/bin/env node
// console_browser.mjs — drives the console of `mcp-bridge serve` (over server-everything,
// server-memory and a cancellation recorder) in Debian's headless chromium through
// playwright-core, as a person would.
//
//   node console_browser.mjs BASE_URL SCREENSHOT_DIR
//
// BASE_URL is the bridge's origin (http://127.0.0.1:PORT). Needs MCP_PLAYWRIGHT_DIR (the
// playwright-core package), MCP_CHROMIUM (the browser) and MCP_PYTHON (the Python SDK's) from
// peers.env. Steps, each with a screenshot in SCREENSHOT_DIR: the upstreams shown; a search that
// finds one tool; a form with nested arguments (memory's create_entities: an array of objects
// holding an array) first sent empty (refused in the page with a message), then filled and sent,
// its result shown; the knowledge graph resource read (it holds the entity just made); a prompt
// got with an argument. The tool is chosen and its form sent from the keyboard; axe-core's WCAG 2
// A/AA rules run on the page connected, with the form, with the result, and with the traffic. The
// live traffic table: the page's own calls appear in it as they end, with p50/p99 per tool;
// filtered by server. Then what the page does with a server and other clients: completion on a
// prompt's arguments and a template's variable; an elicitation answered in the page (and one
// declined); a cancel that reaches the upstream (the recorder's stderr tail in the page); another
// client's call (the Python SDK's, tests/peers/py_client.py) appearing in the live view; the
// page's own session recorded from the page and the recording downloaded.
// Prints one JSON line of what it saw, and every console error and page error. Exit 0 when it
// ran to the end (the line is the result), 1 on a failure of the script itself.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const [base, shots] = process.argv.slice(2);
const require = createRequire(join(process.env.MCP_PLAYWRIGHT_DIR, 'package.json'));
const { chromium } = require(process.env.MCP_PLAYWRIGHT_DIR);
mkdirSync(shots, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), 'console-browser-'));
const seen = { consoleErrors: [], pageErrors: [], accessibility: [] };
const axeSource = readFileSync(join(process.env.MCP_PLAYWRIGHT_DIR, '..', 'axe-core', 'axe.min.js'), 'utf8');

// axe-core's WCAG 2 A/AA rules on the page as it is: the serious and critical violations, each
// as `rule: target`. Evaluated through the DevTools protocol, which the page's CSP does not bind.
async function accessibility(page, when) {
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const result = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .flatMap((v) => v.nodes.map((n) => v.id + ': ' + n.target.join(' ')));
  });
  seen.accessibility.push(...found.map((f) => when + ': ' + f));
}
const pyClient = join(import.meta.dirname, 'py_client.py');
const STEP = 60_000; // a hang guard per step, never a timing assertion

const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.MCP_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 1000 },
});
try {
  const page = context.pages()[0] || await context.newPage();
  page.setDefaultTimeout(STEP);
  page.on('console', (m) => { if (m.type() === 'error') seen.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => seen.pageErrors.push(String(e)));
  const shot = (name) => page.screenshot({ path: join(shots, name + '.png'), fullPage: true });

  await page.goto(base + '/ui');
  await page.waitForSelector('body[data-connected="true"]');
  await page.waitForSelector('body[data-traffic="listening"]');
  seen.upstreams = await page.$$eval('#upstreams tbody tr', (rows) => rows.map((r) => ({
    server: r.dataset.server, state: r.querySelector('td').textContent })));
  await shot('1-upstreams');
  await accessibility(page, 'connected');

  await page.getByLabel('Search tools, prompts, resources and templates').fill('create_ent');
  seen.searchFound = await page.$$eval('#tools button.entry', (b) => b.map((x) => x.dataset.name));
  await shot('2-search');

  // By keyboard: the tool's button focused and pressed with Enter.
  await page.focus('#tools button[data-name="mcp__memory__create_entities"]');
  await page.keyboard.press('Enter');
  seen.sendLabel = await page.textContent('#send');
  await page.click('text=Add entities item');
  const item = page.locator('#fields .item').first();
  await page.click('#send');
  seen.emptyStatus = await page.textContent('#status');
  seen.emptyResult = await page.textContent('#result');
  await shot('3-form-refused');
  await item.locator('input[data-field="name"]').fill('console-entity');
  await item.locator('input[data-field="entityType"]').fill('test');
  await item.locator('button.add').click();
  await item.locator('input[data-field="observations item 1"]').fill('made in the browser');
  await accessibility(page, 'tool form');
  // Sent from the keyboard too: Enter in a field submits the form.
  await item.locator('input[data-field="observations item 1"]').press('Enter');
  await page.waitForSelector('#result[data-done]');
  seen.toolResult = await page.textContent('#result');
  await shot('4-tool-result');
  await accessibility(page, 'tool result');

  await page.getByLabel('Search tools, prompts, resources and templates').fill('knowledge');
  await page.click('#resources button.entry');
  await page.click('#send');
  await page.waitForSelector('#result[data-done]');
  seen.resourceResult = await page.textContent('#result');
  await shot('5-resource-read');

  await page.getByLabel('Search tools, prompts, resources and templates').fill('args-prompt');
  await page.click('#prompts button[data-name="mcp__everything__args-prompt"]');
  await page.getByLabel('city (required)').fill('Paris');
  await page.click('#send');
  await page.waitForSelector('#result[data-done]');
  seen.promptResult = await page.textContent('#result');
  await shot('6-prompt-got');

  // Completion as the user types: server-everything's completable prompt (the second
  // argument's values depend on the first) and a resource template's variable. A suggestion
  // picked with the mouse, then from the keyboard.
  await page.getByLabel('Search tools, prompts, resources and templates').fill('completable');
  await page.click('#prompts button[data-name="mcp__everything__completable-prompt"]');
  await page.getByLabel('department (required)').pressSequentially('Eng');
  await page.click('[aria-label="Suggestions for department"] button.suggestion:text-is("Engineering")');
  seen.completedDepartment = await page.getByLabel('department (required)').inputValue();
  // Tab to the next field: asked on focus, with the department as context.
  await page.keyboard.press('Tab');
  const names = page.locator('[aria-label="Suggestions for name"]:not([hidden]) button.suggestion');
  await names.first().waitFor();
  seen.nameSuggestions = await names.allTextContents();
  await shot('6d-completion-offered');
  await accessibility(page, 'completion suggestions');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  seen.completedName = await page.getByLabel('name (required)').inputValue();
  seen.completionFocus = await page.evaluate(() => document.activeElement.dataset.field);
  await page.click('#send');
  await page.waitForSelector('#result[data-done]');
  seen.completedPrompt = await page.textContent('#result');
  await page.getByLabel('Search tools, prompts, resources and templates').fill('dynamic/text');
  await page.click('#templates button.entry');
  await page.getByLabel('resourceId (required)').pressSequentially('7');
  await page.locator('[aria-label="Suggestions for resourceId"] button.suggestion:text-is("7")').click();
  await page.click('#send');
  await page.waitForSelector('#result[data-done]');
  seen.completedTemplate = await page.textContent('#result .uri');
  await shot('6e-template-completed');

  // An elicitation: server-everything's tool asks, the page shows the requestedSchema as a
  // form, it is filled (strings, a boolean, numbers, single and multiple choices) and accepted
  // from the keyboard; the tool's result says what it got. Then asked again and declined, and
  // again and cancelled.
  await page.getByLabel('Search tools, prompts, resources and templates').fill('trigger-elicitation');
  await page.click('#tools button[data-name="mcp__everything__trigger-elicitation-request"]');
  await page.click('#send');
  const asked = page.locator('form.elicitation[data-elicitation="asking"]');
  await asked.waitFor();
  seen.elicitationFocused = await page.evaluate(() => document.activeElement.dataset.field);
  seen.elicitationTitle = await asked.locator('h4').textContent();
  await asked.locator('[data-field="check"]').check();
  await asked.locator('[data-field="email"]').fill('ada@example.org');
  await asked.locator('[data-field="integer"]').fill('7');
  await asked.locator('[data-field="untitledSingleSelectEnum"]').selectOption({ label: 'Joey' });
  await asked.locator('[data-field="untitledMultipleSelectEnum: Piano"]').check();
  await asked.locator('[data-field="titledSingleSelectEnum"]').selectOption({ label: 'Wonder Woman' });
  await asked.locator('[data-field="titledMultipleSelectEnum: Salmon"]').check();
  await asked.locator('[data-field="legacyTitledEnum"]').selectOption({ label: 'Birds' });
  // Accepted with the required name empty: refused in the page, nothing sent.
  await asked.locator('button[type="submit"]').click();
  seen.elicitationRefused = await asked.locator('p[role="alert"]').last().textContent();
  await asked.locator('[data-field="name"]').fill('Ada Lovelace');
  await shot('6b-elicitation-asked');
  await accessibility(page, 'elicitation form');
  await asked.locator('[data-field="name"]').press('Enter');
  await page.waitForSelector('#result[data-done]');
  seen.elicitationResult = await page.textContent('#result');
  await shot('6c-elicitation-answered');
  await page.click('#send');
  await page.locator('form.elicitation[data-elicitation="asking"]').getByRole('button', { name: 'Decline' }).click();
  await page.waitForSelector('#result[data-done]');
  seen.elicitationDeclined = await page.textContent('#result');
  await page.click('#send');
  await page.locator('form.elicitation[data-elicitation="asking"]').getByRole('button', { name: 'Cancel the question' }).click();
  await page.waitForSelector('#result[data-done]');
  seen.elicitationCancelled = await page.textContent('#result');

  // A long call: its progress shown as it comes, then cancelled from the page.
  await page.getByLabel('Search tools, prompts, resources and templates').fill('long-running');
  await page.click('#tools button[data-name="mcp__everything__trigger-long-running-operation"]');
  await page.getByLabel('duration').fill('600');
  await page.getByLabel('steps').fill('600');
  await page.click('#send');
  await page.waitForSelector('#result progress[data-progress="2"]');
  seen.progressShown = await page.$eval('#result progress', (p) => ({ value: p.value, max: p.max }));
  await shot('7-progress');
  await page.click('#cancel');
  await page.waitForSelector('#result[data-done="cancelled"]');
  seen.cancelledResult = await page.textContent('#result');
  await shot('8-cancelled');
  // The cancel reaches the upstream: the recorder (tests/peers/cancel_recorder.py) writes each
  // notifications/cancelled it gets to its stderr, whose tail the page shows; and the live
  // feed has both calls as cancelled.
  await page.getByLabel('Search tools, prompts, resources and templates').fill('wait_for_cancel');
  await page.click('#tools button[data-name="mcp__recorder__wait_for_cancel"]');
  await page.click('#send');
  await page.waitForSelector('#result progress[data-progress="1"]');
  await page.click('#cancel');
  await page.waitForSelector('#result[data-done="cancelled"]');
  // The recorder's stderr line comes when it comes: the page is refreshed until it shows it.
  const deadline = Date.now() + STEP;
  let recorderTail = '';
  while (!recorderTail.includes('cancelled request')) {
    if (Date.now() > deadline) throw new Error('the recorder never showed a cancellation: ' + recorderTail);
    await page.click('#refresh');
    await page.waitForTimeout(100);
    recorderTail = await page.textContent('#upstreams tr[data-server="recorder"] td:last-child');
  }
  await page.click('#upstreams tr[data-server="recorder"] summary');
  seen.recorderStderr = await page.textContent('#upstreams tr[data-server="recorder"] pre');
  await shot('8b-cancel-reached-upstream');
  for (const name of ['trigger-long-running-operation', 'wait_for_cancel']) {
    await page.waitForSelector(`#traffic tbody tr[data-name="${name}"][data-outcome="cancelled"]`);
  }
  seen.trafficCancelled = await page.$$eval('#traffic tbody tr[data-outcome="cancelled"]',
    (rows) => rows.map((r) => r.cells[3].textContent + ' ' + r.cells[4].textContent + ' ' + r.cells[5].textContent));

  // The session goes on after the cancel.
  await page.getByLabel('Search tools, prompts, resources and templates').fill('get-sum');
  await page.click('#tools button[data-name="mcp__everything__get-sum"]');
  await page.getByLabel('a (required)').fill('2');
  await page.getByLabel('b (required)').fill('40');
  await page.click('#send');
  await page.waitForSelector('#result[data-done]');
  seen.afterCancel = await page.textContent('#result');

  // The live traffic: the call just made appears as it ended; the latency per tool beside it.
  await page.waitForSelector('#traffic tbody tr[data-name="get-sum"][data-outcome="ok"]');
  seen.trafficRow = await page.$eval('#traffic tbody tr[data-name="get-sum"]',
    (r) => [...r.cells].map((c, i) => {
      // What varies (time, session number, latency) as its shape.
      const shape = { 0: /^\d\d:\d\d:\d\d\.\d{3}$/, 2: /^\d+$/, 6: /^\d+\.\d+$/ }[i];
      return shape ? (shape.test(c.textContent) ? 'shape ok' : 'bad: ' + c.textContent) : c.textContent;
    }));
  seen.latencyRow = await page.$eval('#latency tbody tr[data-name="get-sum"]', (r) => ({
    calls: r.querySelector('.calls').textContent,
    p50: Number(r.querySelector('.p50').textContent) >= 0,
    chart: r.querySelector('svg.chart title').textContent.startsWith('p50 and p99 latency per minute of get-sum'),
  }));
  // Another client's call: the Python SDK calls a tool through the bridge while the page is
  // open; its row appears in the page, under a session other than the page's.
  const other = spawnSync(process.env.MCP_PYTHON, [pyClient, '--url', base + '/mcp'], {
    env: { ...process.env, MCP_SCRIPT: JSON.stringify([{ call: 'mcp__everything__echo', args: { message: 'from python' } }]) },
    encoding: 'utf8',
    timeout: STEP,
  });
  if (other.status !== 0) throw new Error('py_client.py failed: ' + other.stderr + other.stdout);
  seen.otherClientSaid = other.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.step === 'tools/call').map((l) => (l.ok ? l.result.content[0].text : l.error));
  await page.waitForSelector('#traffic tbody tr[data-name="echo"][data-outcome="ok"]');
  const sessionOf = (name) => page.$eval(`#traffic tbody tr[data-name="${name}"]`, (r) => r.cells[2].textContent);
  seen.otherClientRow = await page.$eval('#traffic tbody tr[data-name="echo"]', (r) => r.cells[3].textContent + ' ' + r.cells[4].textContent + ' ' + r.cells[5].textContent);
  seen.otherClientSession = (await sessionOf('echo')) !== (await sessionOf('get-sum'));
  await shot('9b-other-client');

  await page.getByLabel('Server', { exact: true }).selectOption('memory');
  seen.trafficMemory = await page.$$eval('#traffic tbody tr', (rows) => rows.map((r) => r.cells[3].textContent + ' ' + r.cells[4].textContent + ' ' + r.cells[5].textContent));
  await shot('9-traffic');
  await accessibility(page, 'traffic');

  // Recording from the page: the page's own session (its client is the console) recorded
  // while one call is made, then stopped, and the recording downloaded.
  await page.click('#sessions-refresh');
  const own = page.locator('#sessions tbody tr[data-client="mcp-bridge-console"]');
  await own.waitFor();
  seen.sessionsListed = await page.$$eval('#sessions tbody tr', (rows) => rows.map((r) => r.dataset.client + ' ' + r.dataset.recording));
  await own.getByRole('button', { name: /^Record session \d+$/ }).click();
  await page.waitForSelector('#sessions tbody tr[data-client="mcp-bridge-console"][data-recording="true"]');
  await page.getByLabel('Search tools, prompts, resources and templates').fill('get-sum');
  await page.click('#tools button[data-name="mcp__everything__get-sum"]');
  await page.getByLabel('a (required)').fill('3');
  await page.getByLabel('b (required)').fill('4');
  await page.click('#send');
  await page.waitForSelector('#result[data-done]');
  await own.getByRole('button', { name: /^Stop recording session \d+$/ }).click();
  await page.waitForSelector('#recordings tbody tr[data-stopped="true"]');
  await shot('10-recording');
  await accessibility(page, 'sessions and recordings');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('#recordings tbody tr[data-stopped="true"]').last().getByRole('button', { name: /^Download recording \d+$/ }).click(),
  ]);
  seen.recordingName = download.suggestedFilename();
  seen.recording = readFileSync(await download.path(), 'utf8');
  process.stdout.write(JSON.stringify(seen) + '\n');
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
