import { gql, type TypedDocumentNode } from "@apollo/client";
import { ApolloProvider, useQuery } from "@apollo/client/react";
import { useEffect, useMemo, useState } from "react";

import { createClient } from "./apollo/client";
import { apiProblem } from "./apollo/errors";
import { NewFansBadge } from "./fans/NewFansBadge";
import { LiveEvents } from "./live/LiveEvents";
import { ProfilePage } from "./profile/ProfilePage";
import { useRoute } from "./route";
import { DemoPicker } from "./session/DemoPicker";
import { fetchDemoSession } from "./session/demo";
import { type Session, storedToken, storeToken } from "./session/session";
import { SignIn } from "./session/SignIn";
import { ViewerContext } from "./session/ViewerContext";
import { Avatar } from "./ui/Avatar";
import { ErrorNotice } from "./ui/ErrorNotice";

const VIEWER: TypedDocumentNode<{
  viewer: {
    id: string;
    userId: string;
    name: string | null;
    avatarUrl: string | null;
    newFansCount: number | null;
    followingCount: number;
    fansCount: number;
    mutualCount: number;
    followRequestCount: number | null;
  } | null;
}> = gql`
  query Viewer {
    viewer {
      id
      userId
      name
      avatarUrl
      newFansCount
      followingCount
      fansCount
      mutualCount
      followRequestCount
    }
  }
`;

type Start = { state: "loading" } | { state: "signed-out"; problem?: string } | { state: "in"; session: Session };

/** The app: finds a session (the demo endpoint, or a stored token), then shows profiles. */
export function App() {
  const [start, setStart] = useState<Start>({ state: "loading" });

  useEffect(() => {
    const token = storedToken();
    if (token) {
      setStart({ state: "in", session: { token, demo: false } });
      return;
    }
    fetchDemoSession()
      .then((demo) =>
        setStart(demo ? { state: "in", session: { token: demo.token, demo: true } } : { state: "signed-out" }),
      )
      .catch((error: unknown) => setStart({ state: "signed-out", problem: String(error) }));
  }, []);

  if (start.state === "loading") return <p className="muted page">Loading…</p>;
  if (start.state === "signed-out") {
    return (
      <SignIn
        problem={start.problem}
        onToken={(token) => {
          storeToken(token);
          setStart({ state: "in", session: { token, demo: false } });
        }}
      />
    );
  }
  return (
    <SignedIn
      session={start.session}
      onSession={(session) => setStart({ state: "in", session })}
      onSignOut={(problem) => {
        storeToken(null);
        setStart({ state: "signed-out", problem });
      }}
    />
  );
}

/** The signed-in session, how to switch to another one and how to sign out. */
interface SessionProps {
  session: Session;
  onSession: (session: Session) => void;
  onSignOut: (problem?: string) => void;
}

function SignedIn({ session, onSession, onSignOut }: SessionProps) {
  const client = useMemo(() => createClient(session.token), [session.token]);
  return (
    <ApolloProvider client={client}>
      <Shell session={session} onSession={onSession} onSignOut={onSignOut} />
    </ApolloProvider>
  );
}

function Shell({ session, onSession, onSignOut }: SessionProps) {
  const { data, error } = useQuery(VIEWER);
  const [route, navigate] = useRoute();
  const problem = error && apiProblem(error);

  useEffect(() => {
    if (problem?.code === "UNAUTHENTICATED") onSignOut(problem.message);
  }, [problem?.code, problem?.message, onSignOut]);

  if (problem) return <ErrorNotice problem={problem} />;
  if (!data) return <p className="muted page">Loading…</p>;
  const viewer = data.viewer;
  if (!viewer) return <p className="error page">The token names no registered user.</p>;

  async function pickDemoUser(userId: string) {
    const demo = await fetchDemoSession(userId);
    if (demo) {
      onSession({ token: demo.token, demo: true });
      navigate(demo.userId);
    }
  }

  return (
    <ViewerContext.Provider value={{ id: viewer.id, userId: viewer.userId }}>
      <LiveEvents>
        <div className="top-bar">
          <a className="brand" href={`#/u/${viewer.userId}`}>
            FollowGraph
          </a>
          <a className="viewer-chip" href={`#/u/${viewer.userId}/fans`}>
            <Avatar userId={viewer.userId} name={viewer.name} url={viewer.avatarUrl} size={28} />
            <span>{viewer.name}</span>
            <NewFansBadge />
          </a>
          <span className="spacer" />
          {session.demo ? (
            <DemoPicker current={viewer.userId} onPick={(userId) => void pickDemoUser(userId)} />
          ) : (
            <button type="button" className="button button-secondary" onClick={() => onSignOut()}>
              Sign out
            </button>
          )}
        </div>
        <main className="page">
          <ProfilePage userId={route.userId ?? viewer.userId} tabKey={route.tab} navigate={navigate} />
        </main>
      </LiveEvents>
    </ViewerContext.Provider>
  );
}
