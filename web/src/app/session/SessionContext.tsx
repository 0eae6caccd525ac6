import { createContext, useContext } from "react";

import type { Session } from "./session";

/** Why the app signs out: a problem (an expired token) or a plain notice (the account deleted). */
export type SignOutReason = { problem: string } | { notice: string };

/** The session the app speaks for (its token, for the account's file endpoints) and how to end it. */
export interface SessionControls {
  session: Session;
  signOut: (reason?: SignOutReason) => void;
}

export const SessionContext = createContext<SessionControls | null>(null);

export function useSession(): SessionControls {
  const controls = useContext(SessionContext);
  if (!controls) throw new Error("useSession needs a signed-in session (SessionContext)");
  return controls;
}
