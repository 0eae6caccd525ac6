import { InMemoryCache, type Reference, type TypePolicies } from "@apollo/client";
import { relayStylePagination } from "@apollo/client/utilities";

/**
 * How the app's cache understands the FollowGraph API.
 *
 * - Users are normalized by their Relay `id` (Apollo's default), so a mutation payload that
 *   returns `user { id relationship fansCount }` updates that user everywhere it is shown.
 * - Connections are merged page after page on their cursors (`relayStylePagination`), one list
 *   per user and field: `first`/`after` are paging arguments, not part of the list's identity.
 *   `suggestions` is a plain list: `first` is part of its identity, and a new answer replaces it.
 * - `FollowEdge` has no identity of its own, so a payload cannot reach the edge's copy of
 *   `relationship`. The edge's `relationship` is by contract the same value as
 *   `node.relationship`, so the cache reads it from the node: every edge of every list
 *   stays right after `follow` / `unfollow`, without refetching. Search results
 *   (`UserSearchEdge`) do the same.
 * - `settings` has no identity: it is part of its user, replaced by each answer.
 * - `user(userId:)` of the viewer is the viewer: the shell's first query reads the viewer with
 *   their profile's fields, so the viewer's own profile is drawn from the cache, without a second
 *   request in a row before the page shows (a phone waits a round trip for each).
 */
const relationshipFromNode = {
  read(existing: string | undefined, { readField }: { readField: <T>(name: string, from?: Reference) => T | undefined }) {
    const node = readField<Reference>("node");
    const fromNode = node ? readField<string>("relationship", node) : undefined;
    return fromNode ?? existing;
  },
};

export const typePolicies: TypePolicies = {
  Query: {
    fields: {
      // The search page's pages, one list per query; the box's first few (a smaller `first`) apart.
      searchUsers: relayStylePagination(["query", "first"]),
      user: {
        read(existing: Reference | null | undefined, { args, readField }) {
          if (existing !== undefined) return existing;
          const viewer = readField<Reference>("viewer");
          return viewer && readField<string>("userId", viewer) === args?.userId ? viewer : undefined;
        },
      },
    },
  },
  User: {
    fields: {
      following: relayStylePagination(),
      fans: relayStylePagination(),
      mutuals: relayStylePagination(),
      followRequests: relayStylePagination(),
      sentFollowRequests: relayStylePagination(),
      blocking: relayStylePagination(),
      muting: relayStylePagination(),
      fansYouFollow: relayStylePagination(),
      settings: { merge: false },
    },
  },
  FollowEdge: {
    // Edges live inside their connection; they are never normalized.
    keyFields: false,
    fields: { relationship: relationshipFromNode },
  },
  UserSearchEdge: {
    keyFields: false,
    fields: { relationship: relationshipFromNode },
  },
};

export function createCache(): InMemoryCache {
  return new InMemoryCache({ typePolicies });
}
