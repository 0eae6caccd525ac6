import type { ApolloCache, Reference } from "@apollo/client";

import { followsViewer, type RelationAction, type Relationship, viewerFollows } from "./relationship";

/** User fields holding lists, as the API names them. */
export type ListField =
  | "following"
  | "fans"
  | "mutuals"
  | "fansYouFollow"
  | "followRequests"
  | "sentFollowRequests"
  | "blocking"
  | "muting"
  | "suggestions";

/**
 * What a confirmed change does to the cached lists. Lists that gained or lost members in an order
 * only the server knows are evicted, and fetched again the next time they are shown; an entry that
 * just leaves a list of the viewer's (an answered or withdrawn request, an unblock, a removed fan)
 * is removed in place.
 */
export interface ListChanges {
  /** Lists of the other user to evict. */
  user: ListField[];
  /** Lists of the viewer to evict. */
  viewer: ListField[];
  /** The viewer's lists the other user leaves. */
  removeFrom: ListField[];
}

/** The lists `action` changed; `followChanged` says whether a follow (not just a request) began or ended. */
export function listChanges(action: RelationAction, followChanged: boolean): ListChanges {
  switch (action) {
    case "follow":
      // A request changes no follow list; suggestions leave out whom the viewer follows or asked to follow.
      return followChanged
        ? { user: ["fans", "mutuals"], viewer: ["following", "mutuals", "suggestions"], removeFrom: [] }
        : { user: [], viewer: ["sentFollowRequests", "suggestions"], removeFrom: [] };
    case "unfollow":
      // An unfollow of a locked account the viewer only asked to follow withdraws the request.
      return followChanged
        ? { user: ["fans", "mutuals"], viewer: ["following", "mutuals", "suggestions"], removeFrom: [] }
        : { user: [], viewer: ["suggestions"], removeFrom: ["sentFollowRequests"] };
    case "removeFan":
      return { user: ["following", "mutuals"], viewer: [], removeFrom: ["fans", "mutuals"] };
    case "block":
      return {
        user: ["following", "fans", "mutuals"],
        viewer: ["following", "fans", "mutuals", "followRequests", "sentFollowRequests", "blocking", "suggestions"],
        removeFrom: [],
      };
    case "unblock":
      return { user: ["following", "fans", "mutuals"], viewer: ["suggestions"], removeFrom: ["blocking"] };
    case "mute":
      return { user: [], viewer: ["muting"], removeFrom: [] };
    case "unmute":
      return { user: [], viewer: [], removeFrom: ["muting"] };
    case "acceptFollowRequest":
      return { user: ["following", "mutuals"], viewer: ["fans", "mutuals"], removeFrom: ["followRequests"] };
    case "rejectFollowRequest":
      return { user: [], viewer: [], removeFrom: ["followRequests"] };
  }
}

interface StoredConnection {
  totalCount?: number;
  edges?: { node?: Reference }[];
}

/** Keeps the entries of `owner`'s cached list `field` whose node passes `keep`; totalCount follows. */
function filterList(
  cache: ApolloCache,
  owner: string,
  field: ListField,
  keep: (node: Reference, read: <T>(name: string, from: Reference) => T | undefined) => boolean,
): void {
  cache.modify({
    id: owner,
    fields: {
      [field]: (value, { readField }) => {
        const existing = value as StoredConnection | null;
        if (!existing?.edges) return value;
        const read = <T,>(name: string, from: Reference) => readField<T>(name, from);
        const edges = existing.edges.filter((edge) => !edge.node || keep(edge.node, read));
        const removed = existing.edges.length - edges.length;
        if (removed === 0) return value;
        const totalCount = existing.totalCount === undefined ? undefined : existing.totalCount - removed;
        return { ...existing, edges, ...(totalCount === undefined ? {} : { totalCount }) };
      },
    },
  });
}

/** Drops the entries of `userId` (a Relay id) from the cached pages of `owner`'s list `field`. */
export function removeFromList(cache: ApolloCache, owner: string, field: ListField, userId: string): void {
  filterList(cache, owner, field, (node, read) => read<string>("id", node) !== userId);
}

/**
 * Which entries of the viewer's own lists still belong there, by their relationship: a list kept on
 * screen through changes (lists/shown.ts) is pruned by it when it is left.
 */
export const BELONGS: Partial<Record<ListField, (relationship: Relationship) => boolean>> = {
  following: viewerFollows,
  fans: followsViewer,
  mutuals: (relationship) => relationship === "MUTUAL",
};

/** Drops the entries of the viewer's own list `field` that no longer belong there. */
export function pruneList(cache: ApolloCache, viewerRef: string, field: ListField): void {
  const belongs = BELONGS[field];
  if (!belongs) return;
  filterList(cache, viewerRef, field, (node, read) => {
    const relationship = read<Relationship>("relationship", node);
    return relationship === undefined || belongs(relationship);
  });
}

/**
 * Applies `changes` to the cache: evictions, then in-place removals. `spare` says whether a list
 * of the viewer's is on screen and must keep its entries until it is left (lists/shown.ts).
 */
export function applyListChanges(
  cache: ApolloCache,
  changes: ListChanges,
  ids: { viewer: string; user: string },
  spare: (viewerRef: string, field: ListField) => boolean = () => false,
): void {
  const viewerRef = cache.identify({ __typename: "User", id: ids.viewer });
  const userRef = cache.identify({ __typename: "User", id: ids.user });
  for (const fieldName of changes.user) cache.evict({ id: userRef, fieldName });
  for (const fieldName of changes.viewer) {
    if (viewerRef && spare(viewerRef, fieldName)) continue;
    cache.evict({ id: viewerRef, fieldName });
  }
  if (viewerRef) for (const field of changes.removeFrom) removeFromList(cache, viewerRef, field, ids.user);
  cache.gc();
}
