import { afterAll, beforeAll } from "vitest";

/** The server under test (started by pytest) and demo tokens from it. */
export const BASE = process.env.FOLLOWGRAPH_URL ?? "";
if (!BASE) throw new Error("FOLLOWGRAPH_URL is not set: these tests run from tests/web/test_clients.py");

export async function demoToken(userId: string): Promise<string> {
  const response = await fetch(`${BASE}/demo/token?user=${userId}`);
  if (!response.ok) throw new Error(`/demo/token answered ${response.status}`);
  return ((await response.json()) as { token: string }).token;
}

/** A plain POST to /graphql, no client library: the server's own answer, to compare caches with. */
export async function graphql<T>(token: string, query: string, variables: object = {}): Promise<T> {
  const response = await fetch(`${BASE}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data: T; errors?: unknown[] };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

export interface Edge {
  cursor: string;
  relationship: string;
  node: { id: string; userId: string; relationship: string; fansCount: number };
}

/** A fan of `owner` whom the viewer neither follows nor is followed by, on the first `first` entries. */
export async function noneFan(token: string, owner: string, first: number): Promise<Edge> {
  const data = await graphql<{ user: { fans: { edges: Edge[] } } }>(
    token,
    `query($owner: ID!, $first: Int!) { user(userId: $owner) { fans(first: $first) {
       edges { cursor relationship node { id userId relationship fansCount } } } } }`,
    { owner, first },
  );
  // Past the first page, so the follow lands on an edge that came from fetchMore.
  const edge = data.user.fans.edges.slice(first / 2).find((e) => e.relationship === "NONE");
  if (!edge) throw new Error(`no NONE fan of ${owner} in the first ${first}`);
  return edge;
}

/** The server's graphql-transport-ws endpoint: the same path as HTTP, over ws:. */
/**
 * For one file's tests: the viewer's token, and a fan of `owner` among the first `first` whom the
 * viewer does not follow. After the file's tests the viewer unfollows that fan again.
 */
export function strangerFan(viewer: string, owner: string, first: number): { token: string; target: Edge } {
  const fan = { token: "", target: {} as Edge };
  beforeAll(async () => {
    fan.token = await demoToken(viewer);
    fan.target = await noneFan(fan.token, owner, first);
  });
  afterAll(async () => {
    await graphql(fan.token, `mutation($u: ID!) { unfollow(input: {userId: $u}) { changed } }`, {
      u: fan.target.node.userId,
    });
  });
  return fan;
}

export const WS_URL = `${BASE.replace(/^http/, "ws")}/graphql`;

export interface RelationEvent {
  eventId: string;
  kind: string;
  actor: { userId: string };
  target: { userId: string };
}

export const EVENT_FIELDS = "eventId kind actor { userId } target { userId }";

/** `actor` follows (or unfollows) `target` over HTTP; returns whether anything changed. */
export async function setFollow(actorToken: string, target: string, follow: boolean): Promise<boolean> {
  const field = follow ? "follow" : "unfollow";
  const data = await graphql<Record<string, { changed: boolean; errors: unknown[] }>>(
    actorToken,
    `mutation($u: ID!) { ${field}(input: {userId: $u}) { changed errors { code message } } }`,
    { u: target },
  );
  const payload = data[field]!;
  if (payload.errors.length) throw new Error(JSON.stringify(payload.errors));
  return payload.changed;
}

/**
 * Wait until the server runs `count` subscriptions (its followgraph_subscriptions gauge on
 * /metrics), then a moment more for each to register with the event hub: an event made after
 * this reaches them live.
 */
export async function untilSubscriptions(count: number, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await (await fetch(`${BASE}/metrics`)).text();
    const running = Number(/^followgraph_subscriptions (\S+)$/m.exec(text)?.[1] ?? NaN);
    if (running === count) break;
    if (Date.now() > deadline) throw new Error(`${running} subscriptions running, not ${count}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await new Promise((resolve) => setTimeout(resolve, 100));
}
