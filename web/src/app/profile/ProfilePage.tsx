import { gql, type TypedDocumentNode } from "@apollo/client";
import { useQuery } from "@apollo/client/react";

import { apiProblem } from "../apollo/errors";
import { NewFansBadge } from "../fans/NewFansBadge";
import { FollowList } from "../lists/FollowList";
import { TABS } from "../lists/tabs";
import { useViewer } from "../session/ViewerContext";
import { Suggestions } from "../suggestions/Suggestions";
import { ErrorNotice } from "../ui/ErrorNotice";
import { PROFILE_HEADER_FRAGMENT, ProfileHeader, type ProfileHeaderUser } from "./ProfileHeader";

const PROFILE_PAGE: TypedDocumentNode<{ user: ProfileHeaderUser | null }, { userId: string }> = gql`
  query ProfilePage($userId: ID!) {
    user(userId: $userId) {
      ...ProfileHeader_user
    }
  }
  ${PROFILE_HEADER_FRAGMENT}
`;

/** A user's profile: the header, then one tab per list (and the viewer's suggestions). */
export function ProfilePage({
  userId,
  tabKey,
  navigate,
}: {
  userId: string;
  tabKey: string;
  navigate: (userId: string, tabKey?: string) => void;
}) {
  const viewer = useViewer();
  const { data, error, refetch } = useQuery(PROFILE_PAGE, { variables: { userId } });
  if (error) return <ErrorNotice problem={apiProblem(error)} onRetry={() => refetch()} />;
  if (!data) return <p className="muted">Loading…</p>;
  if (!data.user) return <p className="error">There is no user {userId}.</p>;
  const own = userId === viewer.userId;
  const tabs = TABS.filter((tab) => own || !tab.viewerOnly);
  const tab = tabs.find((t) => t.key === tabKey) ?? tabs[0]!;
  const counts: Record<string, number | null> = {
    following: data.user.followingCount,
    fans: data.user.fansCount,
    mutuals: data.user.mutualCount,
    requests: data.user.followRequestCount,
  };
  return (
    <section className="profile">
      <ProfileHeader user={data.user} />
      <nav className="tabs" role="tablist">
        {tabs.map((t) => (
          <button
            key={t.key}
            type="button"
            role="tab"
            aria-selected={t.key === tab.key}
            data-tab={t.key}
            onClick={() => navigate(userId, t.key)}
          >
            {t.label}
            {counts[t.key] != null && (
              <span className="tab-count" data-tab-count={t.key}>
                {counts[t.key]!.toLocaleString()}
              </span>
            )}
            {own && t.key === "fans" && <NewFansBadge />}
          </button>
        ))}
      </nav>
      {own && tab.key === "fans" && (
        <div className="tab-tools">
          <NewFansBadge withButton />
        </div>
      )}
      {tab.kind === "suggestions" ? (
        <Suggestions onOpen={(id) => navigate(id)} />
      ) : (
        <FollowList key={`${userId}/${tab.key}`} tab={tab} userId={userId} onOpen={(id) => navigate(id)} />
      )}
    </section>
  );
}
