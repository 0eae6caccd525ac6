/** How a user relates to the viewer (the API's `Relationship` enum). */
export type Relationship = "SELF" | "MUTUAL" | "FOLLOWING" | "FOLLOWED_BY" | "NONE";

export type FollowAction = "follow" | "unfollow";

/** Every mutation between the viewer and another user; each answers with a `FollowPayload`. */
export type RelationAction =
  | FollowAction
  | "removeFan"
  | "block"
  | "unblock"
  | "mute"
  | "unmute"
  | "acceptFollowRequest"
  | "rejectFollowRequest";

/** The relationship after the viewer follows or unfollows a user: what the server will answer. */
export function nextRelationship(current: Relationship, action: FollowAction): Relationship {
  if (action === "follow") {
    if (current === "NONE") return "FOLLOWING";
    if (current === "FOLLOWED_BY") return "MUTUAL";
    return current;
  }
  if (current === "FOLLOWING") return "NONE";
  if (current === "MUTUAL") return "FOLLOWED_BY";
  return current;
}

export function viewerFollows(relationship: Relationship): boolean {
  return relationship === "FOLLOWING" || relationship === "MUTUAL";
}

export function followsViewer(relationship: Relationship): boolean {
  return relationship === "FOLLOWED_BY" || relationship === "MUTUAL";
}

/** A user as the viewer sees them: everything a relation mutation can change but the counts. */
export interface RelationState {
  relationship: Relationship;
  isLocked: boolean;
  viewerRequestedFollow: boolean;
  requestedFollowViewer: boolean;
  viewerBlocks: boolean;
  viewerMutes: boolean;
  blocksViewer: boolean;
}

/**
 * The state after `action`, by the API's rules: what the server will answer when nothing else
 * happened meanwhile. `pending` is the payload's: a follow of a locked account is a request.
 */
export function nextState(state: RelationState, action: RelationAction): { state: RelationState; pending: boolean } {
  const same = { state, pending: false };
  const { relationship } = state;
  switch (action) {
    case "follow":
      // Refused (BLOCKED) or idempotent: nothing to predict.
      if (state.viewerBlocks || state.blocksViewer || viewerFollows(relationship) || state.viewerRequestedFollow) {
        return same;
      }
      if (state.isLocked) return { state: { ...state, viewerRequestedFollow: true }, pending: true };
      return { state: { ...state, relationship: nextRelationship(relationship, "follow") }, pending: false };
    case "unfollow":
      // An unfollow withdraws a pending request.
      if (state.viewerRequestedFollow) return { state: { ...state, viewerRequestedFollow: false }, pending: false };
      return { state: { ...state, relationship: nextRelationship(relationship, "unfollow") }, pending: false };
    case "removeFan":
      // The user stops following the viewer; the viewer's follow of them stays.
      return {
        state: {
          ...state,
          relationship: relationship === "MUTUAL" ? "FOLLOWING" : relationship === "FOLLOWED_BY" ? "NONE" : relationship,
        },
        pending: false,
      };
    case "block":
      // Both follows and any requests either way end.
      return {
        state: {
          ...state,
          relationship: relationship === "SELF" ? relationship : "NONE",
          viewerBlocks: true,
          viewerRequestedFollow: false,
          requestedFollowViewer: false,
        },
        pending: false,
      };
    case "unblock":
      // The follows the block ended stay ended.
      return { state: { ...state, viewerBlocks: false }, pending: false };
    case "mute":
    case "unmute":
      return { state: { ...state, viewerMutes: action === "mute" }, pending: false };
    case "acceptFollowRequest":
      if (!state.requestedFollowViewer) return same;
      return {
        state: {
          ...state,
          requestedFollowViewer: false,
          relationship:
            relationship === "FOLLOWING" ? "MUTUAL" : relationship === "NONE" ? "FOLLOWED_BY" : relationship,
        },
        pending: false,
      };
    case "rejectFollowRequest":
      return { state: { ...state, requestedFollowViewer: false }, pending: false };
  }
}

export const RELATIONSHIP_LABEL: Record<Relationship, string> = {
  SELF: "You",
  MUTUAL: "Mutual",
  FOLLOWING: "Following",
  FOLLOWED_BY: "Follows you",
  NONE: "",
};
