import type { ApolloCache, Reference } from "@apollo/client";

import type { RelationAction } from "./relationship";

/** User fields holding lists, as the API names them. */
export type ListField =
  "following" | "fans" | "mutuals" | "followRequests" | "sentFollowRequests" | "blocking" | "muting" | "suggestions";

/**
 * What a confirmed change does to the cached lists. Lists that gained or lost members in an order
 * only the server knows are evicted, and fetched again the next time they are shown; an entry that
 * just leaves a list the viewer is looking at (an answered request, an unblock) is removed in place.
 */
export interface ListChanges {
  /** Lists of the other user to evict. */
  user: ListField[];
  /** Lists of the viewer to evict. */
  viewer: ListField[];
  /** The viewer's list the other user leaves. */
  removeFrom?: ListField;
}

/** The lists `action` changed; `followChanged` says whether a follow (not just a request) began or ended. */
export function listChanges(action: RelationAction, followChanged: boolean): ListChanges {
  switch (action) {
    case "follow":
    case "unfollow":
      // A request (or its withdrawal) changes no follow list; suggestions leave out whom the
      // viewer follows or asked to follow.
      return followChanged
        ? { user: ["fans", "mutuals"], viewer: ["following", "mutuals", "suggestions"] }
        : { user: [], viewer: ["sentFollowRequests", "suggestions"] };
    case "block":
      return {
        user: ["following", "fans", "mutuals"],
        viewer: ["following", "fans", "mutuals", "followRequests", "sentFollowRequests", "blocking", "suggestions"],
      };
    case "unblock":
      return { user: ["following", "fans", "mutuals"], viewer: ["suggestions"], removeFrom: "blocking" };
    case "mute":
      return { user: [], viewer: ["muting"] };
    case "unmute":
      return { user: [], viewer: [], removeFrom: "muting" };
    case "acceptFollowRequest":
      return { user: ["following", "mutuals"], viewer: ["fans", "mutuals"], removeFrom: "followRequests" };
    case "rejectFollowRequest":
      return { user: [], viewer: [], removeFrom: "followRequests" };
  }
}

interface StoredConnection {
  totalCount?: number;
  edges?: { node?: Reference }[];
}

/** Drops the entries of `userId` (a Relay id) from the cached pages of `owner`'s list `field`. */
export function removeFromList(cache: ApolloCache, owner: string, field: ListField, userId: string): void {
  cache.modify({
    id: owner,
    fields: {
      [field]: (value, { readField }) => {
        const existing = value as StoredConnection | null;
        if (!existing?.edges) return value;
        const edges = existing.edges.filter((edge) => !edge.node || readField("id", edge.node) !== userId);
        const removed = existing.edges.length - edges.length;
        if (removed === 0) return value;
        const totalCount = existing.totalCount === undefined ? undefined : existing.totalCount - removed;
        return { ...existing, edges, ...(totalCount === undefined ? {} : { totalCount }) };
      },
    },
  });
}

/** Applies `changes` to the cache: evictions, then an in-place removal. */
export function applyListChanges(
  cache: ApolloCache,
  changes: ListChanges,
  ids: { viewer: string; user: string },
): void {
  const viewerRef = cache.identify({ __typename: "User", id: ids.viewer });
  const userRef = cache.identify({ __typename: "User", id: ids.user });
  for (const fieldName of changes.user) cache.evict({ id: userRef, fieldName });
  for (const fieldName of changes.viewer) cache.evict({ id: viewerRef, fieldName });
  if (changes.removeFrom && viewerRef) removeFromList(cache, viewerRef, changes.removeFrom, ids.user);
  cache.gc();
}
