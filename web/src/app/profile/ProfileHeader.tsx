import { gql } from "@apollo/client";

import { BlockButton, MuteButton } from "../follow/ControlButtons";
import { FollowButton } from "../follow/FollowButton";
import { RelationshipBadge } from "../follow/RelationshipBadge";
import { FOLLOW_TARGET_FRAGMENT, type FollowTarget } from "../follow/useFollow";
import { profileHash, settingsHash } from "../route";
import { Avatar } from "../ui/Avatar";
import { displayName } from "../ui/names";
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

export interface KnownFan {
  id: string;
  userId: string;
  name: string | null;
  avatarUrl: string | null;
}

export interface ProfileHeaderUser extends FollowTarget {
  name: string | null;
  avatarUrl: string | null;
  /** Null unless the user is the viewer. */
  followRequestCount: number | null;
  /** The first few of the user's fans whom the viewer follows; absent on the viewer's own profile. */
  fansYouFollow?: { totalCount: number; hidden: boolean; edges: { node: KnownFan }[] };
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

/** "Followed by Jing Xu, Kai Silva and 3 others you follow", leading to the whole list. */
function KnownFans({ user }: { user: ProfileHeaderUser }) {
  const known = user.fansYouFollow;
  if (!known || known.hidden || known.totalCount === 0) return null;
  const shown = known.edges.slice(0, 2).map((edge) => edge.node);
  const others = known.totalCount - shown.length;
  const names = shown.map(displayName);
  const text =
    others > 0
      ? `${names.join(", ")} and ${others.toLocaleString()} ${others === 1 ? "other" : "others"} you follow`
      : names.length === 2
        ? `${names[0]} and ${names[1]}`
        : names[0];
  return (
    <a className="known-fans" href={profileHash(user.userId, "known")} data-known-fans={known.totalCount}>
      <span className="known-avatars" aria-hidden="true">
        {shown.map((fan) => (
          <Avatar key={fan.id} userId={fan.userId} name={fan.name} url={fan.avatarUrl} size={22} />
        ))}
      </span>
      <span>Followed by {text}</span>
    </a>
  );
}

/** Name, picture, counts, the viewer's relationship to the user, and the buttons to change it. */
export function ProfileHeader({ user, own }: { user: ProfileHeaderUser; own: boolean }) {
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
        <KnownFans user={user} />
      </div>
      <div className="profile-actions">
        {own ? (
          <a className="button button-secondary" href={settingsHash()} data-action="settings">
            Settings
          </a>
        ) : (
          <>
            <FollowButton user={user} />
            <MuteButton user={user} />
            <BlockButton user={user} />
          </>
        )}
      </div>
    </header>
  );
}
