import { gql, type TypedDocumentNode } from "@apollo/client";
import { ApolloProvider, useQuery } from "@apollo/client/react";
import { useCallback, useEffect, useMemo, useState } from "react";

import { createClient } from "./apollo/client";
import { type ApiProblem, apiProblem, isNetworkFailure } from "./apollo/errors";
import { NewFansBadge } from "./fans/NewFansBadge";
import { LiveEvents } from "./live/LiveEvents";
import { ProfilePage } from "./profile/ProfilePage";
import { useRoute } from "./route";
import { DemoPicker } from "./session/DemoPicker";
import { resumeDemoSession, switchDemoUser } from "./session/demo";
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

type Start =
  | { state: "loading" }
  | { state: "unreachable"; problem: ApiProblem }
  | { state: "signed-out"; problem?: string }
  | { state: "in"; session: Session };

/** The app: finds a session (a stored token, or the demo endpoint), then shows profiles. */
export function App() {
  const [start, setStart] = useState<Start>({ state: "loading" });

  const begin = useCallback(async () => {
    const token = storedToken();
    if (token) {
      setStart({ state: "in", session: { token, demo: false } });
      return;
    }
    try {
      const demo = await resumeDemoSession();
      setStart(demo ? { state: "in", session: { token: demo.token, demo: true } } : { state: "signed-out" });
    } catch (error) {
      // No answer at all: signing in with a token would not help, trying again may.
      if (isNetworkFailure(error)) setStart({ state: "unreachable", problem: apiProblem(error) });
      else setStart({ state: "signed-out", problem: error instanceof Error ? error.message : String(error) });
    }
  }, []);

  useEffect(() => {
    void begin();
  }, [begin]);

  if (start.state === "loading") return <p className="muted page">Loading…</p>;
  if (start.state === "unreachable") {
    return (
      <div className="page">
        <ErrorNotice problem={start.problem} onRetry={begin} />
      </div>
    );
  }
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
  const { data, error, refetch } = useQuery(VIEWER);
  const [route, navigate] = useRoute();
  const problem = error && apiProblem(error);
  const [pickProblem, setPickProblem] = useState<ApiProblem | null>(null);

  useEffect(() => {
    if (problem?.code === "UNAUTHENTICATED") onSignOut(problem.message);
  }, [problem?.code, problem?.message, onSignOut]);

  if (problem) {
    return (
      <div className="page">
        <ErrorNotice problem={problem} onRetry={() => refetch()} />
      </div>
    );
  }
  if (!data) return <p className="muted page">Loading…</p>;
  const viewer = data.viewer;
  if (!viewer) return <p className="error page">The token names no registered user.</p>;

  async function pickDemoUser(userId: string) {
    setPickProblem(null);
    try {
      const demo = await switchDemoUser(userId);
      if (demo) {
        onSession({ token: demo.token, demo: true });
        navigate(demo.userId);
      }
    } catch (caught) {
      setPickProblem(apiProblem(caught));
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
          {pickProblem && <ErrorNotice problem={pickProblem} />}
          <ProfilePage userId={route.userId ?? viewer.userId} tabKey={route.tab} navigate={navigate} />
        </main>
      </LiveEvents>
    </ViewerContext.Provider>
  );
}
