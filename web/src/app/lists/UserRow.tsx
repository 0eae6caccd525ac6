import { gql } from "@apollo/client";
import type { ReactNode } from "react";

import { BlockButton, MuteButton } from "../follow/ControlButtons";
import { FollowButton } from "../follow/FollowButton";
import { RelationshipBadge } from "../follow/RelationshipBadge";
import type { Relationship } from "../follow/relationship";
import { RemoveFanButton } from "../follow/RemoveFanButton";
import { FOLLOW_TARGET_FRAGMENT, type FollowTarget } from "../follow/useFollow";
import { RequestButtons, WithdrawButton } from "../requests/RequestButtons";
import { profileHash } from "../route";
import { Avatar } from "../ui/Avatar";
import { countOf } from "../ui/plural";
import { RelativeTime } from "../ui/RelativeTime";

export const USER_ROW_FRAGMENT = gql`
  fragment UserRow_edge on FollowEdge {
    cursor
    followedAt
    relationship
    node {
      id
      userId
      name
      avatarUrl
      ...FollowButton_user
    }
  }
  ${FOLLOW_TARGET_FRAGMENT}
`;

export interface UserRowEdge {
  cursor: string;
  /** When the follow (or request, block, mute) was made; a search result has none. */
  followedAt?: string;
  relationship: Relationship;
  node: FollowTarget & { name: string | null; avatarUrl: string | null };
}

/** The buttons of a row: what the list is for. */
export type RowControls = "follow" | "request" | "sent" | "block" | "mute";

/** `own`: the list is the viewer's (an unfollow there can be undone; their fans can be removed). */
function Controls({ controls, user, own, field }: { controls: RowControls; user: FollowTarget; own: boolean; field: string }) {
  switch (controls) {
    case "follow":
      return (
        <>
          <FollowButton user={user} undoable={own && (field === "following" || field === "mutuals")} />
          {own && field === "fans" && <RemoveFanButton user={user} />}
        </>
      );
    case "request":
      return <RequestButtons user={user} />;
    case "sent":
      return <WithdrawButton user={user} />;
    case "block":
      return <BlockButton user={user} />;
    case "mute":
      return <MuteButton user={user} />;
  }
}

/** One entry of a list: following, fans, mutuals, requests, blocked or muted users. */
export function UserRow({
  edge,
  controls = "follow",
  own = false,
  field = "",
  since = "Since",
  onOpen,
  extra,
}: {
  edge: UserRowEdge;
  controls?: RowControls;
  own?: boolean;
  field?: string;
  since?: string;
  onOpen: (userId: string) => void;
  extra?: ReactNode;
}) {
  const { node } = edge;
  return (
    <li className="user-row" data-user-id={node.userId}>
      <Avatar userId={node.userId} name={node.name} url={node.avatarUrl} />
      <div className="user-row-text">
        <a
          href={profileHash(node.userId)}
          className="user-name"
          onClick={(event) => {
            if (event.metaKey || event.ctrlKey || event.shiftKey) return;
            event.preventDefault();
            onOpen(node.userId);
          }}
        >
          {node.name ?? `User ${node.userId}`}
        </a>
        <RelationshipBadge relationship={edge.relationship} />
        <div className="muted user-meta">
          <span>@{node.userId}</span> · <span>{countOf(node.fansCount, "fan")}</span>
          {edge.followedAt !== undefined && (
            <>
              {" · "}
              <RelativeTime iso={edge.followedAt} label={since} />
            </>
          )}
          {extra}
        </div>
      </div>
      <span className="row-actions">
        <Controls controls={controls} user={node} own={own} field={field} />
      </span>
    </li>
  );
}
