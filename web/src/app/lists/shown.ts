import type { ApolloCache } from "@apollo/client";

import { BELONGS, type ListField, pruneList } from "../follow/cacheUpdates";

/**
 * The viewer's own lists on screen now. A change made from one of them does not evict it: the
 * entry stays where it is with its new button (an unfollowed user shows Follow, and a second
 * click or the toast's Undo follows again), instead of the list being fetched again from its first
 * page under the reader. When the list is left, its entries that no longer belong are dropped
 * ("prune"), or, when the change may have added an entry, the list is evicted ("evict").
 */
const shown = new Map<string, number>();
const deferred = new Map<string, "prune" | "evict">();

const key = (viewerRef: string, field: ListField) => `${viewerRef} ${field}`;

/** Whether `field` of the viewer is on screen; if so, what to do when it is left is noted. */
export function spareShownList(viewerRef: string, field: ListField, then: "prune" | "evict"): boolean {
  const k = key(viewerRef, field);
  if (!shown.has(k) || !BELONGS[field]) return false;
  if (deferred.get(k) !== "evict") deferred.set(k, then);
  return true;
}

/** Marks the viewer's list `field` as shown; the function returned marks it left. */
export function showList(cache: ApolloCache, viewerRef: string, field: ListField): () => void {
  const k = key(viewerRef, field);
  shown.set(k, (shown.get(k) ?? 0) + 1);
  return () => {
    const count = (shown.get(k) ?? 1) - 1;
    if (count > 0) {
      shown.set(k, count);
      return;
    }
    shown.delete(k);
    const then = deferred.get(k);
    deferred.delete(k);
    if (then === "evict") {
      cache.evict({ id: viewerRef, fieldName: field });
      cache.gc();
    } else if (then === "prune") {
      pruneList(cache, viewerRef, field);
    }
  };
}
