import { gql } from "@apollo/client";

import { FollowButton } from "../follow/FollowButton";
import { RelationshipBadge } from "../follow/RelationshipBadge";
import type { Relationship } from "../follow/relationship";
import { FOLLOW_TARGET_FRAGMENT } from "../follow/useFollow";
import { Avatar } from "../ui/Avatar";

export const PROFILE_HEADER_FRAGMENT = gql`
  fragment ProfileHeader_user on User {
    id
    userId
    name
    avatarUrl
    followingCount
    fansCount
    mutualCount
    relationship
    ...FollowButton_user
  }
  ${FOLLOW_TARGET_FRAGMENT}
`;

export interface ProfileHeaderUser {
  id: string;
  userId: string;
  name: string | null;
  avatarUrl: string | null;
  followingCount: number;
  fansCount: number;
  mutualCount: number;
  relationship: Relationship;
}

/** Name, picture, counts and the viewer's relationship to the user. */
export function ProfileHeader({ user }: { user: ProfileHeaderUser }) {
  return (
    <header className="profile-header" data-user-id={user.userId}>
      <Avatar userId={user.userId} name={user.name} url={user.avatarUrl} size={72} />
      <div className="profile-text">
        <h1>
          {user.name ?? `User ${user.userId}`} <RelationshipBadge relationship={user.relationship} />
        </h1>
        <div className="muted">@{user.userId}</div>
        <dl className="counts">
          <div>
            <dt>Following</dt>
            <dd data-count="following">{user.followingCount.toLocaleString()}</dd>
          </div>
          <div>
            <dt>Fans</dt>
            <dd data-count="fans">{user.fansCount.toLocaleString()}</dd>
          </div>
          <div>
            <dt>Mutuals</dt>
            <dd data-count="mutuals">{user.mutualCount.toLocaleString()}</dd>
          </div>
        </dl>
      </div>
      <FollowButton user={user} />
    </header>
  );
}
