import { gql } from "@apollo/client";

import { BlockButton, MuteButton } from "../follow/ControlButtons";
import { FollowButton } from "../follow/FollowButton";
import { RelationshipBadge } from "../follow/RelationshipBadge";
import { FOLLOW_TARGET_FRAGMENT, type FollowTarget } from "../follow/useFollow";
import { Avatar } from "../ui/Avatar";
import { plural } from "../ui/plural";

export const PROFILE_HEADER_FRAGMENT = gql`
  fragment ProfileHeader_user on User {
    id
    userId
    name
    avatarUrl
    followingCount
    fansCount
    mutualCount
    followRequestCount
    relationship
    ...FollowButton_user
  }
  ${FOLLOW_TARGET_FRAGMENT}
`;

export interface ProfileHeaderUser extends FollowTarget {
  name: string | null;
  avatarUrl: string | null;
  /** Null unless the user is the viewer. */
  followRequestCount: number | null;
}

/** What else the viewer should know about the user: their own blocks, mutes, requests. */
function notes(user: ProfileHeaderUser): string[] {
  return [
    user.isLocked && "Locked account: follows are requests",
    user.blocksViewer && "Blocks you",
    user.viewerBlocks && "Blocked",
    user.viewerMutes && "Muted",
    user.requestedFollowViewer && "Asked to follow you",
  ].filter((note) => note !== false);
}

/** Name, picture, counts, the viewer's relationship to the user, and the buttons to change it. */
export function ProfileHeader({ user }: { user: ProfileHeaderUser }) {
  return (
    <header className="profile-header" data-user-id={user.userId}>
      <Avatar userId={user.userId} name={user.name} url={user.avatarUrl} size={72} />
      <div className="profile-text">
        <h1>
          {user.name ?? `User ${user.userId}`} <RelationshipBadge relationship={user.relationship} />
        </h1>
        <div className="muted">
          @{user.userId}
          {notes(user).map((note) => (
            <span key={note} className="note" data-note={note}>
              {" · "}
              {note}
            </span>
          ))}
        </div>
        <dl className="counts">
          <div>
            <dt>Following</dt>
            <dd data-count="following">{user.followingCount.toLocaleString()}</dd>
          </div>
          <div>
            <dt>{plural(user.fansCount, "Fan")}</dt>
            <dd data-count="fans">{user.fansCount.toLocaleString()}</dd>
          </div>
          <div>
            <dt>{plural(user.mutualCount, "Mutual")}</dt>
            <dd data-count="mutuals">{user.mutualCount.toLocaleString()}</dd>
          </div>
        </dl>
      </div>
      <div className="profile-actions">
        <FollowButton user={user} />
        <MuteButton user={user} />
        <BlockButton user={user} />
      </div>
    </header>
  );
}
