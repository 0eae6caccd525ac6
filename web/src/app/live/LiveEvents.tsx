import { gql, type TypedDocumentNode } from "@apollo/client";
import { useSubscription } from "@apollo/client/react";
import { useViewer } from "../session/ViewerContext";
import { useToast } from "../ui/Toasts";
import { eventEffect, type RelationEvent } from "./events";

// Both users come with the fields an event can change: the cache normalizes them by `id`, so the
// counts, the badges and the viewer's `newFansCount` update wherever they are shown.
const VIEWER_EVENTS: TypedDocumentNode<{ viewerEvents: RelationEvent }, Record<string, never>> = gql`
  subscription ViewerEvents {
    viewerEvents {
      eventId
      kind
      at
      actor {
        ...LiveEvents_user
      }
      target {
        ...LiveEvents_user
      }
    }
  }
  fragment LiveEvents_user on User {
    id
    userId
    name
    relationship
    viewerRequestedFollow
    requestedFollowViewer
    fansCount
    followingCount
    mutualCount
    newFansCount
    followRequestCount
  }
`;

/**
 * The viewer's `viewerEvents` subscription, for as long as they are signed in: a toast per event
 * another user made, and the viewer's lists it changed evicted (fetched again when next shown).
 */
export function LiveEvents() {
  const viewer = useViewer();
  const toast = useToast();

  useSubscription(VIEWER_EVENTS, {
    onData: ({ client, data }) => {
      const event = data.data?.viewerEvents;
      const effect = event && eventEffect(event, viewer.id);
      if (!event || !effect) return;
      const viewerRef = client.cache.identify({ __typename: "User", id: viewer.id });
      for (const fieldName of effect.stale) client.cache.evict({ id: viewerRef, fieldName });
      client.cache.gc();
      toast({ kind: event.kind, text: effect.toast });
    },
  });
  return null;
}
