import { gql, InMemoryCache, type TypedDocumentNode } from "@apollo/client";
import { relayStylePagination } from "@apollo/client/utilities";
import { describe, expect, it } from "vitest";

import { removeFromList } from "../follow/cacheUpdates";
import type { Relationship } from "../follow/relationship";
import { FOLLOW, type FollowTarget, optimisticPayload } from "../follow/useFollow";
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

/** A user as the follow buttons see them: no blocks, mutes or requests unless given. */
function target(userId: string, relationship: Relationship, more: Partial<FollowTarget> = {}): FollowTarget {
  return {
    id: `U:${userId}`,
    userId,
    relationship,
    fansCount: 5,
    followingCount: 3,
    mutualCount: 1,
    isLocked: false,
    viewerRequestedFollow: false,
    requestedFollowViewer: false,
    viewerBlocks: false,
    viewerMutes: false,
    blocksViewer: false,
    ...more,
  };
}

const VIEWER = { id: "U:42", followingCount: 3, fansCount: 8, mutualCount: 1, followRequestCount: 2 };

function followPayload(userId: string) {
  return { follow: optimisticPayload(target(userId, "NONE"), "follow", null) };
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
    expect(edges.map((e) => e.relationship)).toEqual(["NONE", "FOLLOWED_BY", "FOLLOWING", "MUTUAL"]);
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
    const fan = target("7", "FOLLOWED_BY", { fansCount: 10 });
    const payload = optimisticPayload(fan, "follow", VIEWER);
    expect(payload.relationship).toBe("MUTUAL");
    expect(payload.user).toMatchObject({
      relationship: "MUTUAL",
      fansCount: 11,
      mutualCount: 2,
      viewerIsFollowing: true,
    });
    expect(payload.viewer).toMatchObject({ followingCount: 4, mutualCount: 2 });
    const back = optimisticPayload({ ...fan, relationship: "MUTUAL", fansCount: 11 }, "unfollow", VIEWER);
    expect(back.user).toMatchObject({ relationship: "FOLLOWED_BY", fansCount: 10 });
    expect(back.viewer).toMatchObject({ followingCount: 2, mutualCount: 0 });
  });

  it("shows a follow of a locked account as a request, not a follow", () => {
    const locked = target("700", "NONE", { isLocked: true });
    const payload = optimisticPayload(locked, "follow", VIEWER);
    expect(payload).toMatchObject({ changed: true, pending: true, relationship: "NONE" });
    expect(payload.user).toMatchObject({ relationship: "NONE", viewerRequestedFollow: true, fansCount: 5 });
    expect(payload.viewer).toMatchObject({ followingCount: 3 });
    const withdrawn = optimisticPayload({ ...locked, viewerRequestedFollow: true }, "unfollow", VIEWER);
    expect(withdrawn).toMatchObject({ changed: true, pending: false, relationship: "NONE" });
    expect(withdrawn.user).toMatchObject({ viewerRequestedFollow: false, fansCount: 5 });
  });

  it("ends both follows and the requests on a block, and the counts with them", () => {
    const mutual = target("9", "MUTUAL", { requestedFollowViewer: false, viewerMutes: true });
    const payload = optimisticPayload(mutual, "block", VIEWER);
    expect(payload).toMatchObject({ changed: true, relationship: "NONE" });
    expect(payload.user).toMatchObject({
      relationship: "NONE",
      viewerBlocks: true,
      viewerMutes: true,
      viewerIsFollowing: false,
      isFollowingViewer: false,
      fansCount: 4,
      followingCount: 2,
      mutualCount: 0,
    });
    expect(payload.viewer).toMatchObject({ followingCount: 2, fansCount: 7, mutualCount: 0, followRequestCount: 2 });
    const requester = target("10", "NONE", { requestedFollowViewer: true });
    expect(optimisticPayload(requester, "block", VIEWER).viewer).toMatchObject({ followRequestCount: 1 });
    const unblocked = optimisticPayload({ ...mutual, ...payload.user!, viewerBlocks: true }, "unblock", VIEWER);
    expect(unblocked.user).toMatchObject({ relationship: "NONE", viewerBlocks: false, fansCount: 4 });
  });

  it("counts an accepted request as a new fan", () => {
    const requester = target("11", "NONE", { requestedFollowViewer: true });
    const payload = optimisticPayload(requester, "acceptFollowRequest", VIEWER);
    expect(payload.user).toMatchObject({
      relationship: "FOLLOWED_BY",
      requestedFollowViewer: false,
      followingCount: 4,
    });
    expect(payload.viewer).toMatchObject({ fansCount: 9, followRequestCount: 1 });
    const rejected = optimisticPayload(requester, "rejectFollowRequest", VIEWER);
    expect(rejected.user).toMatchObject({ relationship: "NONE", requestedFollowViewer: false, followingCount: 3 });
    expect(rejected.viewer).toMatchObject({ fansCount: 8, followRequestCount: 1 });
  });

  it("predicts no change where the server would refuse (BLOCKED) or do nothing", () => {
    expect(optimisticPayload(target("12", "NONE", { blocksViewer: true }), "follow", VIEWER).changed).toBe(false);
    expect(optimisticPayload(target("12", "FOLLOWING"), "follow", VIEWER).changed).toBe(false);
    expect(optimisticPayload(target("12", "NONE"), "rejectFollowRequest", VIEWER).changed).toBe(false);
  });
});

describe("removeFromList", () => {
  it("drops an answered request from the cached pages and the total", () => {
    const cache = createCache();
    fill(cache);
    removeFromList(cache, "User:U:1", "fans", "U:C");
    const fans = cache.readQuery({ query: FANS })!.user.fans;
    expect(fans.edges.map((e) => e.cursor)).toEqual(["a", "b", "d"]);
    expect(fans.totalCount).toBe(3);
  });
});

describe("the viewer's own profile", () => {
  const VIEWER_PROFILE: TypedDocumentNode<{
    viewer: { __typename: "User"; id: string; userId: string; fansCount: number };
  }> = gql`
    query ViewerProfile {
      viewer {
        id
        userId
        fansCount
      }
    }
  `;
  const PROFILE: TypedDocumentNode<{ user: { id: string; fansCount: number } | null }, { userId: string }> = gql`
    query Profile($userId: ID!) {
      user(userId: $userId) {
        id
        fansCount
      }
    }
  `;

  it("is read from the viewer's answer, and no one else's profile is", () => {
    const cache = createCache();
    expect(cache.readQuery({ query: PROFILE, variables: { userId: "42" } })).toBeNull();
    cache.writeQuery({
      query: VIEWER_PROFILE,
      data: { viewer: { __typename: "User", id: "U:42", userId: "42", fansCount: 7 } },
    });
    expect(cache.readQuery({ query: PROFILE, variables: { userId: "42" } })).toEqual({
      user: { __typename: "User", id: "U:42", fansCount: 7 },
    });
    expect(cache.readQuery({ query: PROFILE, variables: { userId: "43" } })).toBeNull();
    // A profile answered for the viewer's user id is that answer.
    cache.writeQuery({ query: PROFILE, variables: { userId: "42" }, data: { user: null } });
    expect(cache.readQuery({ query: PROFILE, variables: { userId: "42" } })).toEqual({ user: null });
  });
});
