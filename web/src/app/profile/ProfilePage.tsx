import { gql, type TypedDocumentNode } from "@apollo/client";
import { useQuery } from "@apollo/client/react";
import { lazy, Suspense, useEffect } from "react";

import { apiProblem } from "../apollo/errors";
import { MarkFansSeenButton } from "../fans/NewFansBadge";
import { FollowList } from "../lists/FollowList";
import { TAB_OF, TABS } from "../lists/tabs";
import { RequestsPanel } from "../requests/RequestsPanel";
import { navigate, profileHash, settingsHash } from "../route";
import { useViewer } from "../session/ViewerContext";
import { ErrorNotice } from "../ui/ErrorNotice";
import { displayName } from "../ui/names";
import { ProfileSkeleton, RowSkeletons } from "../ui/Skeleton";
import { useDocumentTitle } from "../ui/useDocumentTitle";
import { PROFILE_HEADER_FRAGMENT, ProfileHeader, type ProfileHeaderUser } from "./ProfileHeader";
import { ProfileTabs } from "./ProfileTabs";

// Only on the viewer's own profile, and loaded when first shown.
const Suggestions = lazy(() => import("../suggestions/Suggestions"));

const PROFILE_PAGE: TypedDocumentNode<{ user: ProfileHeaderUser | null }, { userId: string; own: boolean }> = gql`
  query ProfilePage($userId: ID!, $own: Boolean!) {
    user(userId: $userId) {
      ...ProfileHeader_user
      fansYouFollow(first: 3) @skip(if: $own) {
        totalCount
        hidden
        edges {
          cursor
          node {
            id
            userId
            name
            avatarUrl
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
  ${PROFILE_HEADER_FRAGMENT}
`;

// The viewer's blocks and mutes were tabs of their profile; they are in the settings now.
const MOVED: Record<string, string> = { blocking: "blocked", muting: "muted" };

/** A user's profile: the header, then one tab per list (and the viewer's requests and suggestions). */
export function ProfilePage({ userId, tabKey }: { userId: string; tabKey: string }) {
  const viewer = useViewer();
  const own = userId === viewer.userId;
  const { data, error, refetch } = useQuery(PROFILE_PAGE, { variables: { userId, own } });
  const user = data?.user;
  useDocumentTitle(user ? `${displayName(user)} (@${user.userId})` : null);
  const moved = own ? MOVED[tabKey] : undefined;
  useEffect(() => {
    if (moved) navigate(settingsHash(moved), { replace: true });
  }, [moved]);

  if (error) return <ErrorNotice problem={apiProblem(error)} onRetry={() => refetch()} />;
  if (!data) return <ProfileSkeleton />;
  if (!user) return <p className="error">There is no user {userId}.</p>;
  const known = user.fansYouFollow?.totalCount ?? 0;
  const tabs = TABS.filter(
    (tab) =>
      (own || !tab.viewerOnly) &&
      (!own || !tab.othersOnly) &&
      // Fans you know: when there are some, or when asked for by the URL.
      (tab.key !== "known" || known > 0 || tabKey === "known"),
  );
  const selected = TAB_OF[tabKey] ?? tabKey;
  const tab = tabs.find((t) => t.key === selected) ?? tabs[0]!;
  const counts: Record<string, number | null> = {
    following: user.followingCount,
    fans: user.fansCount,
    mutuals: user.mutualCount,
    known,
    requests: user.followRequestCount,
  };
  const open = (id: string) => navigate(profileHash(id));
  return (
    <section className="profile" aria-label={displayName(user)}>
      <ProfileHeader user={user} own={own} />
      <ProfileTabs
        label={`${displayName(user)}’s lists`}
        tabs={tabs}
        selected={tab.key}
        counts={counts}
        onSelect={(key, how) => navigate(profileHash(userId, key), how)}
      >
        {own && tab.key === "fans" && <MarkFansSeenButton />}
        {tab.kind === "suggestions" ? (
          <Suspense fallback={<RowSkeletons />}>
            <Suggestions onOpen={open} />
          </Suspense>
        ) : tab.key === "requests" ? (
          <RequestsPanel userId={userId} sent={tabKey === "sent"} received={user.followRequestCount} onOpen={open} />
        ) : (
          <FollowList key={`${userId}/${tab.key}`} tab={tab} userId={userId} onOpen={open} />
        )}
      </ProfileTabs>
    </section>
  );
}
