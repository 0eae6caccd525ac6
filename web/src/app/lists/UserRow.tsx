import { gql } from "@apollo/client";

import { FollowButton } from "../follow/FollowButton";
import { RelationshipBadge } from "../follow/RelationshipBadge";
import type { Relationship } from "../follow/relationship";
import { FOLLOW_TARGET_FRAGMENT } from "../follow/useFollow";
import { Avatar } from "../ui/Avatar";

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
  node: {
    id: string;
    userId: string;
    name: string | null;
    avatarUrl: string | null;
    relationship: Relationship;
    fansCount: number;
  };
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

/** One entry of a following / fans / mutuals list. */
export function UserRow({ edge, onOpen }: { edge: UserRowEdge; onOpen: (userId: string) => void }) {
  const { node } = edge;
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
          @{node.userId} · {node.fansCount.toLocaleString()} fans · since{" "}
          {dateFormat.format(new Date(edge.followedAt))}
        </div>
      </div>
      <FollowButton user={node} />
    </li>
  );
}
