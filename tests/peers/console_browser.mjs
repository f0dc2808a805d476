#!/usr/bin/env node
// console_browser.mjs — drives the console of `mcp-bridge serve` (over server-everything and
// server-memory) in Debian's headless chromium through playwright-core, as a person would.
//
//   node console_browser.mjs BASE_URL SCREENSHOT_DIR
//
// BASE_URL is the bridge's origin (http://127.0.0.1:PORT). Needs MCP_PLAYWRIGHT_DIR (the
// playwright-core package) and MCP_CHROMIUM (the browser) from peers.env. Steps, each with a
// screenshot in SCREENSHOT_DIR: the upstreams shown; a search that finds one tool; a form with
// nested arguments (memory's create_entities: an array of objects holding an array) first sent
// empty (refused in the page with a message), then filled and sent, its result shown; the
// knowledge graph resource read (it holds the entity just made); a prompt got with an argument.
// Prints one JSON line of what it saw, and every console error and page error. Exit 0 when it
// ran to the end (the line is the result), 1 on a failure of the script itself.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, shots] = process.argv.slice(2);
const require = createRequire(join(process.env.MCP_PLAYWRIGHT_DIR, 'package.json'));
const { chromium } = require(process.env.MCP_PLAYWRIGHT_DIR);
mkdirSync(shots, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), 'console-browser-'));
const seen = { consoleErrors: [], pageErrors: [] };
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
  seen.upstreams = await page.$$eval('#upstreams tbody tr', (rows) => rows.map((r) => ({
    server: r.dataset.server, state: r.querySelector('td').textContent })));
  await shot('1-upstreams');

  await page.getByLabel('Search tools, prompts, resources and templates').fill('create_ent');
  seen.searchFound = await page.$$eval('#tools button.entry', (b) => b.map((x) => x.dataset.name));
  await shot('2-search');

  await page.click('#tools button[data-name="mcp__memory__create_entities"]');
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
  await page.click('#send');
  await page.waitForSelector('#result[data-done]');
  seen.toolResult = await page.textContent('#result');
  await shot('4-tool-result');

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
  process.stdout.write(JSON.stringify(seen) + '\n');
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
