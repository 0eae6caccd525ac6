import { useCallback, useEffect, useState } from "react";

import { apiProblem, isNetworkFailure, type ApiProblem } from "./apollo/errors";
import { resumeDemoSession, takeLinkedDemoUser } from "./session/demo";
import { type Session, storedToken, storeToken } from "./session/session";
import { SignedIn } from "./Shell";
import type { SignOutReason } from "./session/SessionContext";
import { SignIn } from "./session/SignIn";
import { ErrorNotice } from "./ui/ErrorNotice";
import { ProfileSkeleton } from "./ui/Skeleton";

type Start =
  | { state: "loading" }
  | { state: "unreachable"; problem: ApiProblem }
  | { state: "signed-out"; problem?: string; notice?: string; demo?: boolean }
  | { state: "in"; session: Session };

// Read once: the address no longer has it after the first read, and a Retry must still see it.
let linked: string | null | undefined;
const linkedDemoUser = () => (linked === undefined ? (linked = takeLinkedDemoUser()) : linked);

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
      const demo = await resumeDemoSession(linkedDemoUser());
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

  if (start.state === "loading") {
    return (
      <main className="page">
        <ProfileSkeleton />
      </main>
    );
  }
  if (start.state === "unreachable") {
    return (
      <main className="page">
        <ErrorNotice problem={start.problem} onRetry={begin} />
      </main>
    );
  }
  if (start.state === "signed-out") {
    return (
      <SignIn
        problem={start.problem}
        notice={start.notice}
        onDemo={
          start.demo
            ? () => {
                // The demo afresh: a link's user was the one signed out (deleted, say).
                linked = null;
                setStart({ state: "loading" });
                void begin();
              }
            : undefined
        }
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
      onSignOut={(reason?: SignOutReason) => {
        storeToken(null);
        setStart({ state: "signed-out", ...reason, demo: start.session.demo });
      }}
    />
  );
}
