import { gql, type TypedDocumentNode } from "@apollo/client";
import { ApolloProvider, useQuery } from "@apollo/client/react";
import { lazy, Suspense, useEffect, useLayoutEffect, useMemo, useState } from "react";

import type { AccountState } from "./account/state";
import { createClient } from "./apollo/client";
import { type ApiProblem, apiProblem } from "./apollo/errors";
import { NewFansBadge } from "./fans/NewFansBadge";
import { LiveEvents } from "./live/LiveEvents";
import { PROFILE_HEADER_FRAGMENT, type ProfileHeaderUser } from "./profile/ProfileHeader";
import { ProfilePage } from "./profile/ProfilePage";
import { navigate, profileHash, restoreScroll, settingsHash, useRoute } from "./route";
import { SearchBox } from "./search/SearchBox";
import { SearchPage } from "./search/SearchPage";
import { DemoPicker } from "./session/DemoPicker";
import { switchDemoUser } from "./session/demo";
import type { Session } from "./session/session";
import { SessionContext, type SignOutReason } from "./session/SessionContext";
import { ViewerContext } from "./session/ViewerContext";
import { Avatar } from "./ui/Avatar";
import { ConfirmDialogs } from "./ui/ConfirmDialog";
import { ErrorNotice } from "./ui/ErrorNotice";
import { ProfileSkeleton } from "./ui/Skeleton";
import { Toasts } from "./ui/Toasts";

// Loaded when first opened: the profile, the page most visits see, does not carry it.
const SettingsPage = lazy(() => import("./settings/SettingsPage"));
// Seen only by a viewer whose account is off.
const InactiveAccount = lazy(() => import("./account/InactiveAccount"));

// The viewer, with their profile's fields: the viewer's own profile, the page most visits open
// first, is drawn from this one answer (apollo/cache.ts).
const VIEWER: TypedDocumentNode<{
  viewer: (ProfileHeaderUser & {
    id: string;
    userId: string;
    name: string | null;
    avatarUrl: string | null;
    isLocked: boolean;
    newFansCount: number | null;
    followingCount: number;
    fansCount: number;
    mutualCount: number;
    followRequestCount: number | null;
    accountState: AccountState;
  }) | null;
}> = gql`
  query Viewer {
    viewer {
      id
      userId
      name
      avatarUrl
      isLocked
      newFansCount
      followingCount
      fansCount
      mutualCount
      followRequestCount
      accountState
      ...ProfileHeader_user
    }
  }
  ${PROFILE_HEADER_FRAGMENT}
`;

/** The signed-in session, how to switch to another one and how to sign out. */
interface SessionProps {
  session: Session;
  onSession: (session: Session) => void;
  onSignOut: (reason?: SignOutReason) => void;
}

export function SignedIn({ session, onSession, onSignOut }: SessionProps) {
  const client = useMemo(() => {
    // A mutation refused with ACCOUNT_INACTIVE: the account went off meanwhile; the viewer, read
    // again, says how, and the app shows the screen of an account that is off.
    const made = createClient(session.token, "/graphql", undefined, () => {
      void made.refetchQueries({ include: [VIEWER] });
    });
    return made;
  }, [session.token]);
  const controls = useMemo(() => ({ session, signOut: onSignOut }), [session, onSignOut]);
  return (
    <ApolloProvider client={client}>
      <SessionContext.Provider value={controls}>
        <Shell session={session} onSession={onSession} onSignOut={onSignOut} />
      </SessionContext.Provider>
    </ApolloProvider>
  );
}

function Shell({ session, onSession, onSignOut }: SessionProps) {
  const { data, error, refetch } = useQuery(VIEWER);
  const route = useRoute();
  const problem = error && apiProblem(error);
  const [pickProblem, setPickProblem] = useState<ApiProblem | null>(null);

  useEffect(() => {
    if (problem?.code === "UNAUTHENTICATED") onSignOut({ problem: problem.message });
  }, [problem?.code, problem?.message, onSignOut]);

  // A page opened anew starts at the top; one gone back to waits for its content (restoreScroll).
  const routeKey = JSON.stringify(route);
  useLayoutEffect(() => restoreScroll(false), [routeKey]);

  if (problem) {
    return (
      <main className="page">
        <ErrorNotice problem={problem} onRetry={() => refetch()} />
      </main>
    );
  }
  if (!data) {
    return (
      <>
        <div className="top-bar" aria-hidden="true" />
        <main className="page">
          <ProfileSkeleton />
        </main>
      </>
    );
  }
  const viewer = data.viewer;
  if (!viewer) return <p className="error page">The token names no registered user.</p>;

  async function pickDemoUser(userId: string) {
    setPickProblem(null);
    try {
      const demo = await switchDemoUser(userId);
      if (demo) {
        onSession({ token: demo.token, demo: true });
        navigate(profileHash(demo.userId));
      }
    } catch (caught) {
      setPickProblem(apiProblem(caught));
    }
  }

  const switcher = session.demo ? (
    <DemoPicker current={viewer} onPick={(userId) => void pickDemoUser(userId)} />
  ) : (
    <button type="button" className="button button-secondary" onClick={() => onSignOut()}>
      Sign out
    </button>
  );

  if (viewer.accountState !== "ACTIVE") {
    return (
      <ViewerContext.Provider value={{ id: viewer.id, userId: viewer.userId }}>
        <Suspense fallback={<ProfileSkeleton />}>
          <InactiveAccount
            viewer={viewer}
            switcher={switcher}
            notice={pickProblem && <ErrorNotice problem={pickProblem} />}
          />
        </Suspense>
      </ViewerContext.Provider>
    );
  }

  return (
    <ViewerContext.Provider value={{ id: viewer.id, userId: viewer.userId }}>
      <Toasts>
        <ConfirmDialogs>
          <LiveEvents />
          <header className="top-bar">
            <a className="brand" href={profileHash(viewer.userId)}>
              FollowGraph
            </a>
            <a className="viewer-chip" href={profileHash(viewer.userId, "fans")} title="Your fans">
              <Avatar userId={viewer.userId} name={viewer.name} url={viewer.avatarUrl} size={28} />
              <span className="viewer-name">{viewer.name ?? `@${viewer.userId}`}</span>
              <NewFansBadge />
            </a>
            <SearchBox />
            <a
              className="top-link"
              href={settingsHash()}
              aria-current={route.page === "settings" ? "page" : undefined}
              data-action="settings"
            >
              Settings
            </a>
            {switcher}
          </header>
          <main className="page">
            {pickProblem && <ErrorNotice problem={pickProblem} />}
            {route.page === "settings" ? (
              <Suspense fallback={<ProfileSkeleton />}>
                <SettingsPage section={route.section} />
              </Suspense>
            ) : route.page === "search" ? (
              <SearchPage query={route.query} onOpen={(userId) => navigate(profileHash(userId))} />
            ) : (
              <ProfilePage userId={route.userId ?? viewer.userId} tabKey={route.tab} />
            )}
          </main>
        </ConfirmDialogs>
      </Toasts>
    </ViewerContext.Provider>
  );
}
