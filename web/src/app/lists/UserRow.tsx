import { gql } from "@apollo/client";
import type { ReactNode } from "react";

import { BlockButton, MuteButton } from "../follow/ControlButtons";
import { FollowButton } from "../follow/FollowButton";
import { RelationshipBadge } from "../follow/RelationshipBadge";
import type { Relationship } from "../follow/relationship";
import { FOLLOW_TARGET_FRAGMENT, type FollowTarget } from "../follow/useFollow";
import { RequestButtons } from "../requests/RequestButtons";
import { Avatar } from "../ui/Avatar";
import { countOf } from "../ui/plural";

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
  followedAt: string;
  relationship: Relationship;
  node: FollowTarget & { name: string | null; avatarUrl: string | null };
}

/** The buttons of a row: what the list is for. */
export type RowControls = "follow" | "request" | "block" | "mute";

const CONTROLS: Record<RowControls, (props: { user: FollowTarget }) => ReactNode> = {
  follow: FollowButton,
  request: RequestButtons,
  block: BlockButton,
  mute: MuteButton,
};

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

/** One entry of a list: following, fans, mutuals, requests, blocked or muted users. */
export function UserRow({
  edge,
  controls = "follow",
  onOpen,
}: {
  edge: UserRowEdge;
  controls?: RowControls;
  onOpen: (userId: string) => void;
}) {
  const { node } = edge;
  const Controls = CONTROLS[controls];
  return (
    <li className="user-row" data-user-id={node.userId}>
      <Avatar userId={node.userId} name={node.name} url={node.avatarUrl} />
      <div className="user-row-text">
        <a
          href={`#/u/${node.userId}`}
          className="user-name"
          onClick={(event) => {
            event.preventDefault();
            onOpen(node.userId);
          }}
        >
          {node.name ?? `User ${node.userId}`}
        </a>
        <RelationshipBadge relationship={edge.relationship} />
        <div className="muted">
          @{node.userId} · {countOf(node.fansCount, "fan")} · since {dateFormat.format(new Date(edge.followedAt))}
        </div>
      </div>
      <Controls user={node} />
    </li>
  );
}
