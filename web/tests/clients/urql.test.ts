// urql with graphcache (normalized), configured the way the README recommends, against a real server.
import { Client, fetchExchange, gql } from "@urql/core";
import { cacheExchange, type Data } from "@urql/exchange-graphcache";
import { relayPagination } from "@urql/exchange-graphcache/extras";
import { describe, expect, it } from "vitest";

import { BASE, type Edge, strangerFan } from "./server";

const OWNER = "1";
const VIEWER = "8";

const FANS = gql`
  query Fans($after: String) {
    user(userId: "${OWNER}") {
      id
      fans(first: 10, after: $after) {
        totalCount
        edges { cursor relationship node { id userId relationship fansCount } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
`;

const FOLLOW = gql`
  mutation Follow($userId: ID!) {
    follow(input: { userId: $userId }) {
      changed
      relationship
      user { id relationship fansCount }
      errors { code message }
    }
  }
`;

function client(token: string): Client {
  return new Client({
    url: `${BASE}/graphql`,
    fetchOptions: { headers: { authorization: `Bearer ${token}` } },
    exchanges: [
      cacheExchange({
        // Users are keyed by `id` (graphcache's default); edges, connections and pageInfo are not entities.
        keys: { FollowEdge: () => null, FollowConnection: () => null, PageInfo: () => null },
        resolvers: {
          User: { fans: relayPagination() },
          // An edge's relationship is its node's: read it from the node, which follow payloads update.
          FollowEdge: {
            relationship: (parent, _args, cache) => {
              const node = cache.resolve(parent as Data, "node");
              return (node && cache.resolve(node as string, "relationship")) ?? parent.relationship;
            },
          },
        },
      }),
      fetchExchange,
    ],
  });
}

type FansData = { user: { fans: { edges: Edge[]; pageInfo: { endCursor: string } } } };

const fan = strangerFan(VIEWER, OWNER, 20);

describe("urql + graphcache", () => {
  it("pages into one list and keeps its edges right after follow", async () => {
    const urql = client(fan.token);
    const first = await urql.query<FansData>(FANS, {}).toPromise();
    await urql.query<FansData>(FANS, { after: first.data!.user.fans.pageInfo.endCursor }).toPromise();
    const merged = await urql.query<FansData>(FANS, {}, { requestPolicy: "cache-only" }).toPromise();
    expect(merged.data!.user.fans.edges).toHaveLength(20);
    const edgeOf = (data: FansData) => data.user.fans.edges.find((e) => e.cursor === fan.target.cursor)!;
    expect(edgeOf(merged.data!).relationship).toBe("NONE");

    const followed = await urql.mutation(FOLLOW, { userId: fan.target.node.userId }).toPromise();
    expect(followed.data.follow.relationship).toBe("FOLLOWING");

    const after = await urql.query<FansData>(FANS, {}, { requestPolicy: "cache-only" }).toPromise();
    expect(edgeOf(after.data!).relationship).toBe("FOLLOWING");
    expect(edgeOf(after.data!).node.fansCount).toBe(fan.target.node.fansCount + 1);
  });
});
