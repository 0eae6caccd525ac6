import { gql, InMemoryCache, type TypedDocumentNode } from "@apollo/client";
import { relayStylePagination } from "@apollo/client/utilities";
import { describe, expect, it } from "vitest";

import { FOLLOW, optimisticPayload } from "../follow/useFollow";
import { createCache } from "./cache";

interface FansData {
  user: {
    fans: {
      totalCount: number;
      edges: { cursor: string; relationship: string; node: { relationship: string; fansCount: number } }[];
      pageInfo: { hasNextPage: boolean; endCursor: string | null };
    };
  };
}

const FANS: TypedDocumentNode<FansData, { after?: string }> = gql`
  query Fans($after: String) {
    user(userId: "1") {
      id
      fans(first: 2, after: $after) {
        totalCount
        edges {
          cursor
          relationship
          node {
            id
            userId
            relationship
            fansCount
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`;

function user(userId: string, relationship: string) {
  return { __typename: "User", id: `U:${userId}`, userId, relationship, fansCount: 5 };
}

function page(cursors: [string, string], relationships: [string, string], hasNextPage: boolean) {
  return {
    user: {
      __typename: "User",
      id: "U:1",
      fans: {
        __typename: "FollowConnection",
        totalCount: 4,
        edges: cursors.map((cursor, i) => ({
          __typename: "FollowEdge",
          cursor,
          relationship: relationships[i]!,
          node: user(cursor.toUpperCase(), relationships[i]!),
        })),
        pageInfo: { __typename: "PageInfo", hasNextPage, endCursor: cursors[1] },
      },
    },
  };
}

function fill(cache: InMemoryCache) {
  cache.writeQuery({ query: FANS, data: page(["a", "b"], ["NONE", "FOLLOWED_BY"], true) });
  cache.writeQuery({ query: FANS, variables: { after: "b" }, data: page(["c", "d"], ["NONE", "MUTUAL"], false) });
}

function followPayload(userId: string) {
  const target = { id: `U:${userId}`, userId, relationship: "NONE" as const, fansCount: 5 };
  return { follow: optimisticPayload(target, "follow", null) };
}

describe("the app's cache", () => {
  it("merges pages on their cursors", () => {
    const cache = createCache();
    fill(cache);
    const fans = cache.readQuery({ query: FANS })!.user.fans;
    expect(fans.edges.map((e) => e.cursor)).toEqual(["a", "b", "c", "d"]);
    expect(fans.pageInfo.hasNextPage).toBe(false);
    expect(fans.totalCount).toBe(4);
  });

  it("keeps an edge's relationship equal to its node's after a follow payload", () => {
    const cache = createCache();
    fill(cache);
    cache.writeQuery({ query: FOLLOW, variables: { userId: "C" }, data: followPayload("C") });
    const edges = cache.readQuery({ query: FANS })!.user.fans.edges;
    expect(edges.map((e) => e.relationship)).toEqual([
      "NONE",
      "FOLLOWED_BY",
      "FOLLOWING",
      "MUTUAL",
    ]);
    expect(edges[2]?.node.fansCount).toBe(6);
  });

  it("is what goes stale without the FollowEdge policy", () => {
    const plain = new InMemoryCache({
      typePolicies: { User: { fields: { fans: relayStylePagination() } } },
    });
    fill(plain);
    plain.writeQuery({ query: FOLLOW, variables: { userId: "C" }, data: followPayload("C") });
    const edge = plain.readQuery({ query: FANS })!.user.fans.edges[2];
    expect(edge?.node.relationship).toBe("FOLLOWING");
    expect(edge?.relationship).toBe("NONE");
  });
});

describe("optimisticPayload", () => {
  it("predicts the counts", () => {
    const target = { id: "U:7", userId: "7", relationship: "FOLLOWED_BY" as const, fansCount: 10 };
    const viewer = { id: "U:42", followingCount: 3, mutualCount: 1 };
    const payload = optimisticPayload(target, "follow", viewer);
    expect(payload.relationship).toBe("MUTUAL");
    expect(payload.user).toMatchObject({ relationship: "MUTUAL", fansCount: 11, viewerIsFollowing: true });
    expect(payload.viewer).toMatchObject({ followingCount: 4, mutualCount: 2 });
    const back = optimisticPayload({ ...target, relationship: "MUTUAL", fansCount: 11 }, "unfollow", viewer);
    expect(back.user).toMatchObject({ relationship: "FOLLOWED_BY", fansCount: 10 });
    expect(back.viewer).toMatchObject({ followingCount: 2, mutualCount: 0 });
  });
});
