import type { ApolloCache } from "@apollo/client";

import type { ImportedList } from "./files";

// The viewer's lists and counts an import into each list may change. A block ends the follows
// both ways and the requests between the two.
const VIEWER_FIELDS: Record<ImportedList, string[]> = {
  following: ["following", "mutuals", "sentFollowRequests", "suggestions", "followingCount", "mutualCount"],
  blocks: [
    "following",
    "fans",
    "mutuals",
    "followRequests",
    "sentFollowRequests",
    "blocking",
    "suggestions",
    "followingCount",
    "fansCount",
    "mutualCount",
    "followRequestCount",
  ],
  mutes: ["muting"],
};

/**
 * Once an import into `list` has ended: it may have changed the viewer's relationship with up to
 * 10,000 users, most of whom the cache does not know. A following or blocks import evicts every
 * other user and every answer naming users (read again when next shown); a mutes import, only
 * whether the viewer mutes each. The viewer keeps what the import does not touch.
 */
export function forgetImported(cache: ApolloCache, viewerId: string, list: ImportedList): void {
  const viewer = cache.identify({ __typename: "User", id: viewerId });
  for (const fieldName of VIEWER_FIELDS[list]) cache.evict({ id: viewer, fieldName });
  const stored = cache.extract() as Record<string, Record<string, unknown> | undefined>;
  for (const id of Object.keys(stored)) {
    if (!id.startsWith("User:") || id === viewer) continue;
    if (list === "mutes") cache.evict({ id, fieldName: "viewerMutes" });
    else cache.evict({ id });
  }
  if (list !== "mutes") {
    // Stored as `user({"userId":"1"})`: evicted by the field's name, whatever its arguments.
    const names = new Set(Object.keys(stored.ROOT_QUERY ?? {}).map((key) => key.replace(/[:(].*$/, "")));
    for (const fieldName of names) {
      if (fieldName !== "__typename" && fieldName !== "viewer") cache.evict({ id: "ROOT_QUERY", fieldName });
    }
  }
  cache.gc();
}
