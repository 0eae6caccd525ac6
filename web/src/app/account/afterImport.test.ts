import { gql } from "@apollo/client";
import { describe, expect, it } from "vitest";

import { createCache } from "../apollo/cache";
import { forgetImported } from "./afterImport";

const SHOWN = gql`
  query Shown {
    viewer {
      id
      userId
      name
      followingCount
      muting(first: 20) {
        totalCount
      }
    }
    user(userId: "7") {
      id
      userId
      name
      relationship
      viewerMutes
    }
  }
`;

function cacheShowing() {
  const cache = createCache();
  cache.writeQuery({
    query: SHOWN,
    data: {
      viewer: {
        __typename: "User",
        id: "U:42",
        userId: "42",
        name: "Lei Wu",
        followingCount: 10,
        muting: {
          __typename: "FollowConnection",
          totalCount: 1,
          edges: [],
          pageInfo: { __typename: "PageInfo", hasNextPage: false, endCursor: null },
        },
      },
      user: { __typename: "User", id: "U:7", userId: "7", name: "Jing Xu", relationship: "NONE", viewerMutes: false },
    },
  });
  return cache;
}

describe("the cache once an import has ended", () => {
  it("after following: reads the viewer's counts and every other user again; the viewer stays", () => {
    const cache = cacheShowing();
    forgetImported(cache, "U:42", "following");
    const stored = cache.extract() as Record<string, Record<string, unknown>>;
    expect(stored["User:U:7"]).toBeUndefined();
    expect(stored["User:U:42"]).toMatchObject({ userId: "42", name: "Lei Wu" });
    expect(stored["User:U:42"]).not.toHaveProperty("followingCount");
    expect(Object.keys(stored.ROOT_QUERY!)).toEqual(["__typename", "viewer"]);
    expect(cache.readQuery({ query: SHOWN })).toBeNull();
  });

  it("after mutes: only the viewer's muted list and whether they mute each user", () => {
    const cache = cacheShowing();
    forgetImported(cache, "U:42", "mutes");
    const stored = cache.extract() as Record<string, Record<string, unknown>>;
    expect(stored["User:U:7"]).toMatchObject({ relationship: "NONE" });
    expect(stored["User:U:7"]).not.toHaveProperty("viewerMutes");
    expect(stored["User:U:42"]).toMatchObject({ followingCount: 10 });
    expect(Object.keys(stored["User:U:42"]!).some((key) => key.startsWith("muting"))).toBe(false);
  });
});
