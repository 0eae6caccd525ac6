/** How a user relates to the viewer (the API's `Relationship` enum). */
export type Relationship = "SELF" | "MUTUAL" | "FOLLOWING" | "FOLLOWED_BY" | "NONE";

export type FollowAction = "follow" | "unfollow";

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

export const RELATIONSHIP_LABEL: Record<Relationship, string> = {
  SELF: "You",
  MUTUAL: "Mutual",
  FOLLOWING: "Following",
  FOLLOWED_BY: "Follows you",
  NONE: "",
};
