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
