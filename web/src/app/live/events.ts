import type { ListField } from "../follow/cacheUpdates";

export type RelationEventKind =
  | "FOLLOW"
  | "UNFOLLOW"
  | "REMOVE_FAN"
  | "FOLLOW_REQUEST"
  | "ACCEPT_FOLLOW_REQUEST"
  | "REJECT_FOLLOW_REQUEST"
  | "BLOCK"
  | "UNBLOCK"
  | "MUTE"
  | "UNMUTE";

export interface EventUser {
  id: string;
  userId: string;
  name: string | null;
}

export interface RelationEvent {
  eventId: string;
  kind: RelationEventKind;
  actor: EventUser;
  target: EventUser;
  at: string;
}

/** What an event pushed to the viewer means to them: a toast, and the viewer's lists it changed. */
export interface EventEffect {
  toast: string;
  stale: ListField[];
}

const name = (user: EventUser) => user.name ?? `@${user.userId}`;

/**
 * The effect of another user's event that names the viewer; null for the viewer's own events
 * (this tab already applied those from the mutation's payload; another device's show on the next load).
 */
export function eventEffect(event: RelationEvent, viewerId: string): EventEffect | null {
  if (event.actor.id === viewerId || event.target.id !== viewerId) return null;
  const who = name(event.actor);
  switch (event.kind) {
    case "FOLLOW":
      return { toast: `${who} followed you`, stale: ["fans", "mutuals"] };
    case "UNFOLLOW":
      return { toast: `${who} unfollowed you`, stale: ["fans", "mutuals"] };
    case "REMOVE_FAN":
      return { toast: `${who} removed you from their fans`, stale: ["following", "mutuals"] };
    case "FOLLOW_REQUEST":
      return { toast: `${who} asked to follow you`, stale: ["followRequests"] };
    case "ACCEPT_FOLLOW_REQUEST":
      return { toast: `${who} accepted your follow request`, stale: ["following", "mutuals", "sentFollowRequests"] };
    case "REJECT_FOLLOW_REQUEST":
      return { toast: `${who} declined your follow request`, stale: ["sentFollowRequests"] };
    default:
      // Blocks and mutes by others are never pushed.
      return null;
  }
}
