// The built app against a server that runs only the app's own operations
// (FOLLOWGRAPH_TRUSTED_DOCUMENTS=require with the manifest the build wrote), in headless Chromium.
// Run by tests/web/test_trusted_browser.py:
//   FOLLOWGRAPH_URL=http://127.0.0.1:PORT [CHROMIUM=/usr/bin/chromium] node tests/browser/trusted.mjs
// Every query and mutation the app sends over HTTP carries its id alone, never a document; the
// live events' subscription (over WebSocket, whole) is one of the manifest's too; a document of
// someone else's is refused.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { chromium } from "playwright-core";

const base = process.env.FOLLOWGRAPH_URL ?? "http://127.0.0.1:8000";
const manifest = JSON.parse(readFileSync(new URL("../../dist/persisted-query-manifest.json", import.meta.url)));
const ids = Object.fromEntries(manifest.operations.map((operation) => [operation.name, operation.id]));

const VIEWER = "42";
// A user whose fans page the viewer opens, and who follows the viewer meanwhile (live event).
const OWNER = "1";
const LIVE = "106";

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
});
const sent = [];
const failures = [];

async function demoToken(userId) {
  const response = await fetch(`${base}/demo/token?user=${userId}`);
  assert.equal(response.status, 200);
  return (await response.json()).token;
}

/** An operation of the manifest by its id, as another client of the app would send it. */
async function byId(token, name, variables) {
  const response = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ variables, extensions: { persistedQuery: { version: 1, sha256Hash: ids[name] } } }),
  });
  const body = await response.json();
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
context.setDefaultTimeout(20_000);
const token = await demoToken(VIEWER);
await context.addInitScript((value) => sessionStorage.setItem("followgraph.token", value), token);
const page = await context.newPage();
page.on("pageerror", (error) => failures.push(`page error: ${error.message}`));
page.on("console", (message) => {
  if (message.type() === "error") failures.push(`console: ${message.text()}`);
});
page.on("request", (request) => {
  if (new URL(request.url()).pathname !== "/graphql" || request.method() !== "POST") return;
  sent.push(JSON.parse(request.postData() ?? "{}"));
});
page.on("response", async (response) => {
  if (new URL(response.url()).pathname !== "/graphql" || response.request().method() !== "POST") return;
  const body = await response.json().catch(() => null);
  for (const error of body?.errors ?? []) failures.push(`${error.extensions?.code}: ${error.message}`);
});

// A fans page, a profile, a follow and its undo, the settings page and a search.
await page.goto(`${base}/#/u/${OWNER}/fans`, { waitUntil: "load" });
const rows = page.locator('[data-list="fans"] li.user-row');
await rows.first().waitFor();
const row = rows.filter({ has: page.locator('button[data-action="follow"]') }).first();
const fan = await row.getAttribute("data-user-id");
await row.locator('button[data-action="follow"]').click();
await page.locator(`li.user-row[data-user-id="${fan}"] button[data-action="unfollow"]`).waitFor();
await page.locator(`li.user-row[data-user-id="${fan}"] button[data-action="unfollow"]`).click();
await page.locator(`li.user-row[data-user-id="${fan}"] button[data-action="follow"]`).waitFor();
await page.locator('.top-bar a[data-action="settings"]').click();
await page.locator("form.privacy").waitFor();
await page.evaluate((owner) => {
  location.hash = `#/u/${owner}`;
}, LIVE);
await page.locator(`.profile-header[data-user-id="${LIVE}"]`).waitFor();
const search = page.getByRole("combobox", { name: "Search people" });
await search.fill("Jing");
await page.locator('.search [role="row"]').first().waitFor();
await search.press("Escape");

// A follow of the viewer by another user reaches the app as a live event: the subscription,
// sent whole over WebSocket, is the manifest's.
const liveToken = await demoToken(LIVE);
await byId(liveToken, "Unfollow", { userId: VIEWER });
await page.waitForTimeout(300);
await byId(liveToken, "Follow", { userId: VIEWER });
await page.locator('.toast[data-toast-kind="FOLLOW"]').waitFor();
await byId(liveToken, "Unfollow", { userId: VIEWER });

// Another document, however harmless, is refused.
const refused = await fetch(`${base}/graphql`, {
  method: "POST",
  headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
  body: JSON.stringify({ query: "{ viewer { userId } }" }),
});
assert.equal(refused.status, 400);
assert.equal((await refused.json()).errors[0].extensions.code, "PERSISTED_QUERY_NOT_IN_LIST");

await browser.close();
assert.deepEqual(failures, []);
const names = new Set(sent.map((body) => body.operationName));
for (const name of ["FansList", "Follow", "Unfollow", "Settings", "ProfilePage", "SearchUsers"]) {
  assert.ok(names.has(name), `the app sent no ${name}: ${[...names].join(", ")}`);
}
for (const body of sent) {
  assert.equal(body.query, undefined, `${body.operationName} went with its document`);
  assert.equal(body.extensions?.persistedQuery?.sha256Hash, ids[body.operationName], body.operationName);
}
console.log(`ok ${sent.length} requests by id alone: ${[...names].sort().join(", ")}`);
