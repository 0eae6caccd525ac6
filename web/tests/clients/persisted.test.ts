// Apollo Client's persisted-query link against a real server: hashes first, the document only when
// the server does not know the hash yet, over POST and over GET.
import { createHash } from "node:crypto";

import { ApolloClient, gql, HttpLink, InMemoryCache } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { describe, expect, it } from "vitest";

import { BASE } from "./server";

interface Sent {
  method: string;
  hasDocument: boolean;
  hasHash: boolean;
}

function recordingClient(useGET: boolean): { client: ApolloClient; sent: Sent[] } {
  const sent: Sent[] = [];
  const recording: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const method = init?.method ?? "GET";
    const body = method === "POST" ? (JSON.parse(String(init?.body)) as Record<string, unknown>) : null;
    const query = body ? body.query : url.searchParams.get("query");
    const extensions = body ? body.extensions : url.searchParams.get("extensions");
    const hasHash = JSON.stringify(extensions ?? "").includes("sha256Hash");
    sent.push({ method, hasDocument: Boolean(query), hasHash });
    return fetch(input, init);
  };
  const persisted = new PersistedQueryLink({
    sha256: (document: string) => createHash("sha256").update(document).digest("hex"),
    useGETForHashedQueries: useGET,
  });
  const http = new HttpLink({ uri: `${BASE}/graphql`, fetch: recording });
  return { client: new ApolloClient({ link: persisted.concat(http), cache: new InMemoryCache() }), sent };
}

// A document of its own per run, so the server has not seen its hash before.
function userQuery(tag: string) {
  return gql`query PersistedUser${tag} { user(userId: "1") { userId name } }`;
}

describe("Apollo's persisted-query link", () => {
  for (const useGET of [false, true]) {
    it(`registers a document once and then sends its hash alone (${useGET ? "GET" : "POST"})`, async () => {
      const query = userQuery(`${useGET ? "Get" : "Post"}${Date.now()}`);
      const first = recordingClient(useGET);
      const answer = await first.client.query({ query });
      expect(answer.data).toMatchObject({ user: { userId: "1" } });
      // The hash alone, refused as not found, then the document with its hash.
      expect(first.sent.map((s) => [s.hasHash, s.hasDocument])).toEqual([
        [true, false],
        [true, true],
      ]);
      const second = recordingClient(useGET);
      const again = await second.client.query({ query });
      expect(again.data).toEqual(answer.data);
      expect(second.sent).toEqual([{ method: useGET ? "GET" : "POST", hasDocument: false, hasHash: true }]);
    });
  }
});
