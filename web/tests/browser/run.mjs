// Browser tests of the built front, in headless Chromium driven by playwright-core.
// Run by tests/web/test_browser.py against a real `followgraph serve --demo`:
//   FOLLOWGRAPH_URL=http://127.0.0.1:PORT [SCREENSHOTS=dir] [CHROMIUM=/usr/bin/chromium] node tests/browser/run.mjs
// Every request to a host other than 127.0.0.1 is failed, and the run fails if any was attempted.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

import { chromium } from "playwright-core";

const base = process.env.FOLLOWGRAPH_URL ?? "http://127.0.0.1:8000";
const screenshots = process.env.SCREENSHOTS;
const timeout = 20_000;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
const offHost = [];
const failures = [];
const consoleErrors = [];

/**
 * A page in a context of its own; `quiet` for a page whose failed requests are the point. Requests
 * to other hosts are failed, unless `intercept` is false: Chromium then asks for a page's icon
 * (it does not while requests are intercepted), and they are only noted.
 */
async function newPage({ viewport = { width: 1280, height: 860 }, quiet = false, intercept = true } = {}) {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(timeout);
  if (intercept) {
    await context.route("**/*", (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === "127.0.0.1") return route.continue();
      offHost.push(url.href);
      return route.abort("blockedbyclient");
    });
  } else {
    context.on("request", (request) => {
      const url = new URL(request.url());
      if (url.hostname !== "127.0.0.1") offHost.push(url.href);
    });
  }
  const page = await context.newPage();
  page.on("pageerror", (error) => failures.push(`page error: ${error.message}`));
  // A 404 (a missing /favicon.ico, say) or any other error the browser logs.
  page.on("console", (message) => {
    if (message.type() === "error" && !quiet) consoleErrors.push(`${page.url()}: ${message.text()}`);
  });
  return page;
}

async function shot(page, name) {
  if (!screenshots) return;
  mkdirSync(screenshots, { recursive: true });
  await page.screenshot({ path: join(screenshots, name) });
}

async function step(name, run) {
  const started = Date.now();
  await run();
  console.log(`ok ${name} (${Date.now() - started} ms)`);
}

await step("GraphiQL renders and runs the example query with the demo token", async () => {
  const page = await newPage();
  await page.goto(`${base}/graphql`, { waitUntil: "load" });
  await page.locator(".graphiql-container").waitFor();
  // The Headers pane holds the demo user's token (Monaco renders the text in .view-lines).
  await page.locator(".graphiql-editor-tool .view-lines", { hasText: "Bearer" }).waitFor();
  await page.locator(".graphiql-query-editor .view-lines", { hasText: "FansOfUser1" }).waitFor();
  await page.locator(".graphiql-execute-button").click();
  const response = page.locator(".graphiql-response .view-lines");
  await response.filter({ hasText: '"userId": "42"' }).waitFor();
  await response.filter({ hasText: '"relationship"' }).waitFor();
  await shot(page, "graphiql.png");
  await page.context().close();
});

await step("the app and GraphiQL name an inline icon: no request for /favicon.ico, no 404 logged", async () => {
  const page = await newPage({ intercept: false });
  const logged = consoleErrors.length;
  for (const [path, ready] of [
    ["/#/u/42", ".profile-header"],
    ["/graphql", ".graphiql-container"],
  ]) {
    await page.goto(`${base}${path}`, { waitUntil: "load" });
    await page.locator(ready).waitFor();
    assert.match(await page.locator('link[rel="icon"]').getAttribute("href"), /^data:image\/svg\+xml,/);
    await page.waitForTimeout(1_000); // the icon is asked for after the load
  }
  assert.deepEqual(consoleErrors.slice(logged), []);
  await page.context().close();
});

// Another user's token and the API over HTTP, as a second client beside the browser.
async function demoToken(userId) {
  const response = await fetch(`${base}/demo/token?user=${userId}`);
  assert.equal(response.status, 200);
  return (await response.json()).token;
}

async function setFollow(token, userId, follow) {
  const field = follow ? "follow" : "unfollow";
  const response = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({
      query: `mutation($u: ID!) { ${field}(input: {userId: $u}) { changed } }`,
      variables: { u: userId },
    }),
  });
  const body = await response.json();
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
}

async function runningSubscriptions() {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^followgraph_subscriptions (\S+)$/m.exec(text)?.[1] ?? NaN);
}

async function until(condition, message) {
  const deadline = Date.now() + timeout;
  while (!(await condition())) {
    assert.ok(Date.now() < deadline, message());
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

await step("GraphiQL runs viewerEvents over WebSocket and shows a follow of the viewer", async () => {
  const viewer = "42";
  const fan = "530";
  const fanToken = await demoToken(fan);
  await setFollow(fanToken, viewer, false);

  const page = await newPage();
  const sockets = [];
  page.on("websocket", (socket) => {
    const opened = { url: socket.url(), sent: [], closed: false };
    socket.on("framesent", (frame) => opened.sent.push(JSON.parse(frame.payload)));
    socket.on("close", () => (opened.closed = true));
    sockets.push(opened);
  });
  await page.goto(`${base}/graphql`, { waitUntil: "load" });
  await page.locator(".graphiql-editor-tool .view-lines", { hasText: "Bearer" }).waitFor();
  await page.locator(".graphiql-query-editor .view-lines", { hasText: "FansOfUser1" }).click();
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.press("Delete");
  // One insertText, not typing key by key; what Monaco adds after the cursor (closing braces) goes.
  await page.keyboard.insertText("subscription { viewerEvents { kind actor { userId } target { userId } } }");
  await page.keyboard.press("ControlOrMeta+Shift+End");
  await page.keyboard.press("Delete");
  await page.getByRole("button", { name: /^Prettify query/ }).click();
  // Prettified: `userId` on lines of its own, two of them.
  await page.locator(".graphiql-query-editor .view-line", { hasText: "userId" }).nth(1).waitFor();
  // GraphiQL re-reads the document's operations 100 ms after the last edit (its debounce).
  await page.waitForTimeout(400);

  const before = await runningSubscriptions();
  await page.locator(".graphiql-execute-button").click();
  await until(
    async () => (await runningSubscriptions()) > before,
    () => `the subscription did not start on the server; sockets: ${JSON.stringify(sockets)}`,
  );
  await page.waitForTimeout(200); // the hub registers it just after the gauge counts it
  await setFollow(fanToken, viewer, true);

  const response = page.locator(".graphiql-response .view-lines");
  await response.filter({ hasText: '"kind": "FOLLOW"' }).waitFor();
  await response.filter({ hasText: `"userId": "${fan}"` }).waitFor();
  await response.filter({ hasText: `"userId": "${viewer}"` }).waitFor();
  await shot(page, "graphiql-subscription.png");

  // One socket, to the same origin and path, whose connection_init carries the Headers pane's token.
  assert.deepEqual(
    sockets.map((socket) => socket.url),
    [`${base.replace(/^http/, "ws")}/graphql`],
  );
  const [init] = sockets[0].sent;
  assert.equal(init.type, "connection_init");
  const [scheme, jwt] = init.payload.Authorization.split(" ");
  assert.equal(scheme, "Bearer");
  assert.equal(JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString()).sub, viewer);

  // The execute button, now a stop button, ends the subscription and closes the socket.
  await page.locator(".graphiql-execute-button").click();
  await until(
    async () => sockets[0].closed && (await runningSubscriptions()) === before,
    () => "the subscription did not end on the server",
  );
  await setFollow(fanToken, viewer, false);

  // A bad token in the Headers pane: the server closes with 4403, shown at once (no retries).
  await page.locator(".graphiql-editor-tool .view-lines", { hasText: "Bearer" }).click();
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText('{"Authorization": "Bearer not-a-token"}');
  await page.keyboard.press("ControlOrMeta+Shift+End");
  await page.keyboard.press("Delete");
  await page.locator(".graphiql-editor-tool .view-lines", { hasText: "not-a-token" }).waitFor();
  await page.waitForTimeout(400);
  const started = Date.now();
  await page.locator(".graphiql-execute-button").click();
  await response.filter({ hasText: "The socket closed: 4403" }).waitFor({ timeout: 5_000 });
  assert.ok(Date.now() - started < 5_000);
  assert.equal(sockets.length, 2);
  await page.context().close();
});

await step("the app pages fans, follows a NONE fan, and every badge follows", async () => {
  const page = await newPage();
  await page.goto(`${base}/#/u/1/fans`, { waitUntil: "load" });
  await page.evaluate(() => {
    window.__sameDocument = true;
  });
  const rows = page.locator('[data-list="fans"] li.user-row');
  await rows.first().waitFor();
  assert.equal(await rows.count(), 20);
  // Infinite scroll: reaching the end of the list loads the next page on its cursor.
  await page.locator(".list-end").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelectorAll('[data-list="fans"] li.user-row').length >= 40);
  await page.locator(".list-end").scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelectorAll('[data-list="fans"] li.user-row').length >= 60);

  // A fan of user 1 on a later page whom the viewer (42) neither follows nor is followed by.
  const candidate = rows.filter({ has: page.locator('[data-relationship="NONE"]') }).nth(25);
  const fanId = await candidate.getAttribute("data-user-id");
  assert.ok(fanId, "no NONE fan on the first pages");
  const row = page.locator(`[data-list="fans"] li.user-row[data-user-id="${fanId}"]`);

  // Open their profile and follow them from its header.
  await row.locator(".user-name").click();
  const header = page.locator(`.profile-header[data-user-id="${fanId}"]`);
  await header.waitFor();
  const fansBefore = Number((await header.locator('[data-count="fans"]').innerText()).replace(/\D/g, ""));
  await header.locator('button[data-action="follow"]').click();
  await header.locator('[data-relationship="FOLLOWING"]').waitFor();
  await header.locator('button[data-action="unfollow"]').waitFor();
  await page.waitForFunction(
    ([id, n]) =>
      document.querySelector(`.profile-header[data-user-id="${id}"] [data-count="fans"]`)?.textContent ===
      n.toLocaleString(),
    [fanId, fansBefore + 1],
  );

  // Back to user 1's fans: the same edge, from the cache, now says FOLLOWING.
  await page.goBack();
  await row.waitFor();
  await row.locator('[data-relationship="FOLLOWING"]').waitFor();
  assert.equal(await row.locator('button[data-action="unfollow"]').count(), 1);
  assert.ok((await rows.count()) >= 60, "the pages already loaded are kept");

  // Following straight from the list updates the row in place.
  const another = rows.filter({ has: page.locator('[data-relationship="NONE"]') }).first();
  const anotherId = await another.getAttribute("data-user-id");
  const anotherRow = page.locator(`[data-list="fans"] li.user-row[data-user-id="${anotherId}"]`);
  await anotherRow.locator('button[data-action="follow"]').click();
  await anotherRow.locator('[data-relationship="FOLLOWING"]').waitFor();
  await anotherRow.scrollIntoViewIfNeeded();
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, "app.png");

  // Undo both follows (the demo data stays as it was) and check the badges go back.
  await anotherRow.locator('button[data-action="unfollow"]').click();
  await anotherRow.locator('[data-relationship="NONE"]').waitFor({ state: "attached" });
  await row.locator('button[data-action="unfollow"]').click();
  await row.locator('[data-relationship="NONE"]').waitFor({ state: "attached" });
  assert.equal(await page.evaluate(() => window.__sameDocument), true, "the page was reloaded");
  await page.context().close();
});

await step("new fans: the badge counts them and markFansSeen clears it", async () => {
  const page = await newPage();
  await page.goto(`${base}/#/u/42/fans`, { waitUntil: "load" });
  const badge = page.locator(".top-bar [data-new-fans]");
  await badge.waitFor();
  assert.ok(Number(await badge.getAttribute("data-new-fans")) > 0);
  await page.locator(".tab-tools button", { hasText: "Mark as seen" }).click();
  await badge.waitFor({ state: "detached" });
  await page.reload();
  await page.locator('[data-list="fans"] li.user-row').first().waitFor();
  assert.equal(await page.locator(".top-bar [data-new-fans]").count(), 0, "markFansSeen did not stick");
  await page.context().close();
});

// The API as another client: `query` with `token`, failing on any error.
async function api(token, query, variables = {}) {
  const response = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}

const relate = (token, field, userId) =>
  api(token, `mutation($u: ID!) { ${field}(input: {userId: $u}) { changed errors { code } } }`, { u: userId });

/** The app signed in as `userId` with a pasted token (how production signs in), not the demo picker. */
async function appAs(userId) {
  const page = await newPage();
  const token = await demoToken(userId);
  await page.context().addInitScript((value) => sessionStorage.setItem("followgraph.token", value), token);
  return page;
}

/** Opens `hash` in the app already loaded in `page`: no reload, the cache stays. */
async function open(page, hash) {
  await page.evaluate((value) => {
    location.hash = value;
  }, hash);
}

async function count(scope, name) {
  return Number((await scope.locator(`[data-count="${name}"]`).innerText()).replace(/\D/g, ""));
}

async function waitForCount(page, userId, name, value) {
  await page.waitForFunction(
    ([id, key, n]) =>
      document.querySelector(`.profile-header[data-user-id="${id}"] [data-count="${key}"]`)?.textContent ===
      n.toLocaleString(),
    [userId, name, value],
  );
}

const VIEWER = "42";
const PAGE = 20; // the app's page size (lists/tabs.ts)
const LOCKED = "103";
const REQUESTER = "104";
const BLOCKED = "105";
const LIVE = "106";

await step("a follow of a locked account shows Requested, never Following, and a click withdraws it", async () => {
  const viewerToken = await demoToken(VIEWER);
  const lockedToken = await demoToken(LOCKED);
  await relate(viewerToken, "unfollow", LOCKED);
  await api(lockedToken, "mutation { updateSettings(input: {locked: true}) { errors { code } } }");
  const requested = async () =>
    (await api(viewerToken, `{ user(userId: "${LOCKED}") { viewerRequestedFollow } }`)).user.viewerRequestedFollow;

  const page = await newPage();
  await page.goto(`${base}/#/u/${LOCKED}`, { waitUntil: "load" });
  const header = page.locator(`.profile-header[data-user-id="${LOCKED}"]`);
  await header.locator('[data-note^="Locked account"]').waitFor();
  const fans = await count(header, "fans");
  // Every relationship the header shows from now on, even for a moment.
  await page.evaluate(() => {
    window.__shown = new Set();
    const note = () =>
      document
        .querySelectorAll(".profile-header [data-relationship]")
        .forEach((badge) => window.__shown.add(badge.dataset.relationship));
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true });
  });

  await header.locator('button[data-action="follow"]').click();
  await header.locator('button[data-action="withdraw"]', { hasText: "Requested" }).waitFor();
  await until(requested, () => "the request did not reach the server");
  assert.equal(await count(header, "fans"), fans);

  await header.locator('button[data-action="withdraw"]').click();
  await header.locator('button[data-action="follow"]').waitFor();
  await until(
    async () => !(await requested()),
    () => "the request was not withdrawn",
  );

  // Asked again, for the Requests tab of the next step.
  await header.locator('button[data-action="follow"]').click();
  await header.locator('button[data-action="withdraw"]').waitFor();
  await until(requested, () => "the second request did not reach the server");
  assert.deepEqual(
    (await page.evaluate(() => [...window.__shown])).filter((r) => r !== "NONE"),
    [],
  );
  assert.equal(await count(header, "fans"), fans);
  await page.context().close();
});

await step("the Requests tab accepts and rejects, and the entries and counts follow", async () => {
  const lockedToken = await demoToken(LOCKED);
  const viewerToken = await demoToken(VIEWER);
  const requesterToken = await demoToken(REQUESTER);
  await relate(requesterToken, "unfollow", LOCKED);
  const followed = await relate(requesterToken, "follow", LOCKED);
  assert.deepEqual(followed.follow.errors, []);

  const page = await appAs(LOCKED);
  await page.goto(`${base}/#/u/${LOCKED}/requests`, { waitUntil: "load" });
  const header = page.locator(`.profile-header[data-user-id="${LOCKED}"]`);
  const row = (id) => page.locator(`[data-list="requests"] li.user-row[data-user-id="${id}"]`);
  await row(VIEWER).waitFor();
  await row(REQUESTER).waitFor();
  const tabCount = page.locator('[data-tab-count="requests"]');
  assert.equal(await tabCount.innerText(), "2");
  const fans = await count(header, "fans");
  await shot(page, "app-requests.png");

  await row(VIEWER).locator('button[data-action="accept"]').click();
  await row(VIEWER).waitFor({ state: "detached" });
  await waitForCount(page, LOCKED, "fans", fans + 1);
  await tabCount.filter({ hasText: /^1$/ }).waitFor();
  await row(REQUESTER).locator('button[data-action="reject"]').click();
  await row(REQUESTER).waitFor({ state: "detached" });
  await tabCount.filter({ hasText: /^0$/ }).waitFor();
  assert.equal(await count(header, "fans"), fans + 1);
  await page.locator('[data-list="requests"]', { hasText: "No pending requests." }).waitFor();

  const seen = await api(viewerToken, `{ user(userId: "${LOCKED}") { relationship } }`);
  assert.equal(seen.user.relationship, "FOLLOWING");
  const asked = await api(requesterToken, `{ user(userId: "${LOCKED}") { relationship viewerRequestedFollow } }`);
  assert.deepEqual(asked.user, { relationship: "NONE", viewerRequestedFollow: false });

  await api(lockedToken, "mutation { updateSettings(input: {locked: false}) { errors { code } } }");
  await relate(viewerToken, "unfollow", LOCKED);
  await page.context().close();
});

await step("block and mute from a profile, undone from the Blocked and Muted tabs; BLOCKED shown", async () => {
  const viewerToken = await demoToken(VIEWER);
  const otherToken = await demoToken(BLOCKED);
  for (const field of ["unblock", "unmute"]) await relate(viewerToken, field, BLOCKED);
  await relate(otherToken, "unblock", VIEWER);
  await relate(viewerToken, "follow", BLOCKED);

  const page = await newPage();
  await page.goto(`${base}/#/u/${BLOCKED}`, { waitUntil: "load" });
  const header = page.locator(`.profile-header[data-user-id="${BLOCKED}"]`);
  await header.locator('[data-relationship="FOLLOWING"]').waitFor();
  const fans = await count(header, "fans");

  // Blocking ends the follow: the badge, the button and the count change at once.
  await header.locator('button[data-action="block"]').click();
  await header.locator('button[data-action="unblock"]').waitFor();
  await header.locator('[data-relationship="NONE"]').waitFor({ state: "attached" });
  assert.equal(await header.locator('button[data-action="follow"], button[data-action="unfollow"]').count(), 0);
  await waitForCount(page, BLOCKED, "fans", fans - 1);

  await open(page, `#/u/${VIEWER}/blocking`);
  const blockedRow = page.locator(`[data-list="blocking"] li.user-row[data-user-id="${BLOCKED}"]`);
  await blockedRow.locator('button[data-action="unblock"]').click();
  await blockedRow.waitFor({ state: "detached" });

  await open(page, `#/u/${BLOCKED}`);
  await header.locator('button[data-action="mute"]').click();
  await header.locator('button[data-action="unmute"]').waitFor();
  await open(page, `#/u/${VIEWER}/muting`);
  const mutedRow = page.locator(`[data-list="muting"] li.user-row[data-user-id="${BLOCKED}"]`);
  await mutedRow.waitFor();
  await shot(page, "app-muted.png");
  await mutedRow.locator('button[data-action="unmute"]').click();
  await mutedRow.waitFor({ state: "detached" });

  // The other user blocks the viewer meanwhile: the cached profile still shows Follow; the server's
  // BLOCKED answer rolls the guess back, says why, and the profile fetched again turns Follow off.
  await relate(otherToken, "block", VIEWER);
  await open(page, `#/u/${BLOCKED}`);
  await header.locator('button[data-action="follow"]').click();
  await header.locator('[role="alert"]', { hasText: "blocks" }).waitFor();
  await header.locator('[data-relationship="NONE"]').waitFor({ state: "attached" });
  await header.locator('button[data-action="follow-blocked"]:disabled').waitFor();
  await header.locator('[data-follow-note="blocks-viewer"]', { hasText: "They block you" }).waitFor();
  assert.equal(await header.locator('button[data-action="follow"]').count(), 0);

  // A fresh load knows it from the start.
  await page.reload();
  await header.locator('button[data-action="follow-blocked"]:disabled').waitFor();
  assert.equal(await header.locator('button[data-action="follow"]').count(), 0);
  await header.locator('button[data-action="mute"]').waitFor();
  await relate(otherToken, "unblock", VIEWER);
  await page.context().close();
});

/** Fails unless the page is no wider than its viewport and every profile button is fully in view. */
async function assertFits(page, what) {
  const layout = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const buttons = [...document.querySelectorAll(".profile-actions button, .top-bar select")].map((element) => {
      const box = element.getBoundingClientRect();
      // What is drawn at the button's middle: the button itself unless something clips or covers it.
      const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
      return {
        label: element.textContent.trim().slice(0, 30) || element.tagName,
        left: box.left,
        right: box.right,
        shown: hit !== null && (hit === element || element.contains(hit)),
      };
    });
    return { width, scrollWidth: document.documentElement.scrollWidth, buttons };
  });
  assert.ok(layout.scrollWidth <= layout.width, `${what}: ${layout.scrollWidth}px wide in ${layout.width}px`);
  assert.ok(layout.buttons.length > 0, `${what}: no buttons found`);
  for (const button of layout.buttons) {
    assert.ok(button.left >= 0 && button.right <= layout.width, `${what}: ${JSON.stringify(button)} is cut off`);
    assert.ok(button.shown, `${what}: ${JSON.stringify(button)} is hidden`);
  }
}

await step("at 390px nothing scrolls sideways, and the profile's buttons wrap and stay in view", async () => {
  const otherToken = await demoToken(BLOCKED);
  const lockedToken = await demoToken(LOCKED);
  // Notes to wrap ("Locked account: follows are requests", "Blocks you") and the disabled Follow.
  await api(lockedToken, "mutation { updateSettings(input: {locked: true}) { errors { code } } }");
  await relate(otherToken, "block", VIEWER);

  const page = await newPage({ viewport: { width: 390, height: 844 } });
  await page.goto(`${base}/#/u/1/fans`, { waitUntil: "load" });
  await page.locator('[data-list="fans"] li.user-row').first().waitFor();
  await page.locator('.top-bar select option[value="1"]').waitFor({ state: "attached" });
  await assertFits(page, "user 1's fans");
  await shot(page, "app-390.png");
  for (const userId of [LOCKED, BLOCKED, VIEWER]) {
    await open(page, `#/u/${userId}`);
    await page.locator(`.profile-header[data-user-id="${userId}"]`).waitFor();
    if (userId === BLOCKED) await page.locator('.profile-actions [data-follow-note="blocks-viewer"]').waitFor();
    await assertFits(page, `user ${userId}`);
  }
  await open(page, `#/u/${BLOCKED}`);
  await page.locator(`.profile-header[data-user-id="${BLOCKED}"] [data-note="Blocks you"]`).waitFor();
  await shot(page, "app-390-blocked.png");
  await open(page, `#/u/${LOCKED}`);
  await page.locator(`.profile-header[data-user-id="${LOCKED}"] [data-note^="Locked account"]`).waitFor();
  // A word longer than the screen is wide breaks rather than pushing the page wider.
  await page.locator(".profile-header h1").evaluate((h1) => h1.prepend(`${"Longname".repeat(12)} `));
  await page.locator(".profile-header .note").first().evaluate((note) => note.append(` ${"word".repeat(30)}`));
  await assertFits(page, "long words");

  await relate(otherToken, "unblock", VIEWER);
  await api(lockedToken, "mutation { updateSettings(input: {locked: false}) { errors { code } } }");
  await page.context().close();
});

await step("the demo user picked stays picked after a reload; one no longer in the graph falls back", async () => {
  const page = await newPage();
  await page.goto(`${base}/`, { waitUntil: "load" });
  const picker = page.locator('.top-bar select[aria-label="Demo user"]');
  await page.locator(`.profile-header[data-user-id="${VIEWER}"]`).waitFor();
  assert.equal(await picker.inputValue(), VIEWER);
  await picker.locator('option[value="7"]').waitFor({ state: "attached" });
  await picker.selectOption("7");
  await page.locator('.profile-header[data-user-id="7"] [data-relationship="SELF"]').waitFor();

  await page.reload();
  await page.locator('.profile-header[data-user-id="7"] [data-relationship="SELF"]').waitFor();
  assert.equal(await picker.inputValue(), "7");
  // Another tab of the same browser, on no profile in particular: still user 7, on their own profile.
  const tab = await page.context().newPage();
  await tab.goto(`${base}/`, { waitUntil: "load" });
  await tab.locator('.profile-header[data-user-id="7"] [data-relationship="SELF"]').waitFor();
  assert.equal(await tab.locator('.top-bar select[aria-label="Demo user"]').inputValue(), "7");
  await page.context().close();

  // Its token is asked for first, and refused (422): the one error this page logs.
  const stale = await newPage({ quiet: true });
  await stale.context().addInitScript(() => localStorage.setItem("followgraph.demoUser", "no-such-user"));
  await stale.goto(`${base}/`, { waitUntil: "load" });
  await stale.locator(`.profile-header[data-user-id="${VIEWER}"] [data-relationship="SELF"]`).waitFor();
  assert.equal(await stale.evaluate(() => localStorage.getItem("followgraph.demoUser")), null);
  await stale.context().close();
});

await step("the server out of reach: a plain notice and a Retry, which loads the app once it answers", async () => {
  const page = await newPage({ quiet: true });
  let refused = 0;
  const down = (route) => {
    refused += 1;
    return route.abort("connectionrefused");
  };
  const notice = page.locator('[role="alert"][data-code="NETWORK"]');
  const retry = notice.locator('button[data-action="retry"]');

  // The demo endpoint first: no session can be had.
  await page.route("**/demo/token*", down);
  await page.goto(`${base}/#/u/${VIEWER}`, { waitUntil: "load" });
  await notice.filter({ hasText: "Cannot reach the FollowGraph server." }).waitFor();
  await page.unroute("**/demo/token*", down);

  // Then the API: the viewer cannot be read, and each Retry while it is still down asks again.
  await page.route("**/graphql", down);
  for (let attempt = 0; attempt < 2; attempt++) {
    const before = refused;
    await retry.click();
    await until(
      async () => refused > before,
      () => "Retry sent no request",
    );
    await notice.filter({ hasText: "Cannot reach the FollowGraph server." }).waitFor();
    await retry.filter({ hasText: /^Retry$/ }).waitFor();
  }
  assert.doesNotMatch(await page.locator("body").innerText(), /Failed to fetch/);
  await shot(page, "app-unreachable.png");
  await page.unroute("**/graphql", down);
  await retry.click();
  await page.locator(`.profile-header[data-user-id="${VIEWER}"] [data-relationship="SELF"]`).waitFor();
  assert.equal(await notice.count(), 0);

  // A next page of a list that cannot be had: the pages shown stay, with a Retry under them.
  await open(page, "#/u/1/fans");
  const rows = page.locator('[data-list="fans"] li.user-row');
  await rows.nth(PAGE - 1).waitFor();
  await page.route("**/graphql", down);
  await page.locator(".list-end").last().scrollIntoViewIfNeeded();
  await notice.filter({ hasText: "Cannot reach the FollowGraph server." }).waitFor();
  assert.equal(await rows.count(), PAGE);
  await page.unroute("**/graphql", down);
  await retry.click();
  await rows.nth(2 * PAGE - 1).waitFor();
  assert.equal(await notice.count(), 0);
  await page.context().close();
});

await step(
  "live: another user follows the viewer; a toast, the new-fans badge and the fans list, without a reload",
  async () => {
    const liveToken = await demoToken(LIVE);
    const viewerToken = await demoToken(VIEWER);
    await relate(viewerToken, "unfollow", LIVE);
    const newFans = async () => (await api(liveToken, "{ viewer { newFansCount } }")).viewer.newFansCount;
    // The pages of the earlier steps are closed: wait until the server has seen their sockets go.
    await until(
      async () => (await runningSubscriptions()) === 0,
      () => "subscriptions of closed pages still run",
    );

    // Context A: the app of user LIVE, on their fans.
    const a = await appAs(LIVE);
    await a.goto(`${base}/#/u/${LIVE}/fans`, { waitUntil: "load" });
    await a.locator('[data-list="fans"] li.user-row').first().waitFor();
    await a.evaluate(() => {
      window.__sameDocument = true;
    });
    await until(
      async () => (await runningSubscriptions()) === 1,
      () => "the app did not subscribe to viewerEvents",
    );
    await a.waitForTimeout(200); // the hub registers it just after the gauge counts it
    const seenBefore = await newFans();
    const fansBefore = await count(a.locator(`.profile-header[data-user-id="${LIVE}"]`), "fans");
    assert.equal(await a.locator(`[data-list="fans"] li.user-row[data-user-id="${VIEWER}"]`).count(), 0);

    // Context B: the demo viewer's app follows LIVE from their profile.
    const b = await newPage();
    await b.goto(`${base}/#/u/${LIVE}`, { waitUntil: "load" });
    await b.locator(`.profile-header[data-user-id="${LIVE}"] button[data-action="follow"]`).click();
    await b.locator(`.profile-header[data-user-id="${LIVE}"] button[data-action="unfollow"]`).waitFor();

    await a.locator('.toast[data-toast-kind="FOLLOW"]', { hasText: "followed you" }).waitFor();
    await a.locator(`.top-bar [data-new-fans="${seenBefore + 1}"]`).waitFor();
    await a.locator(`[data-list="fans"] li.user-row[data-user-id="${VIEWER}"]`).waitFor();
    await waitForCount(a, LIVE, "fans", fansBefore + 1);
    assert.equal(await a.evaluate(() => window.__sameDocument), true, "the page was reloaded");
    await shot(a, "app-live.png");

    await relate(viewerToken, "unfollow", LIVE);
    await a.locator('.toast[data-toast-kind="UNFOLLOW"]').waitFor();
    await a.locator(`[data-list="fans"] li.user-row[data-user-id="${VIEWER}"]`).waitFor({ state: "detached" });
    await b.context().close();
    await a.context().close();
  },
);

await browser.close();
assert.deepEqual(failures, []);
assert.deepEqual(consoleErrors, [], "the browser logged errors");
assert.deepEqual(offHost, [], `requests to other hosts: ${offHost.join(", ")}`);
console.log("ok no request left 127.0.0.1");
