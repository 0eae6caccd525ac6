import { describe, expect, it } from "vitest";

import { type EventUser, eventEffect, type RelationEvent, type RelationEventKind } from "./events";

const viewer: EventUser = { id: "U:42", userId: "42", name: "Lin Yue" };
const other: EventUser = { id: "U:7", userId: "7", name: null };

function event(kind: RelationEventKind, actor = other, target = viewer): RelationEvent {
  return { eventId: "1-0", kind, actor, target, at: "2026-12-01T00:00:00.000Z" };
}

describe("eventEffect", () => {
  it("toasts another user's follow and marks the viewer's fans stale", () => {
    expect(eventEffect(event("FOLLOW"), viewer.id)).toEqual({ toast: "@7 followed you", stale: ["fans", "mutuals"] });
    expect(eventEffect(event("FOLLOW_REQUEST"), viewer.id)?.stale).toEqual(["followRequests"]);
    expect(eventEffect(event("ACCEPT_FOLLOW_REQUEST"), viewer.id)?.toast).toBe("@7 accepted your follow request");
  });

  it("ignores the viewer's own events, which the mutation's payload already applied", () => {
    expect(eventEffect(event("FOLLOW", viewer, other), viewer.id)).toBeNull();
    expect(eventEffect(event("BLOCK"), viewer.id)).toBeNull();
  });
});
