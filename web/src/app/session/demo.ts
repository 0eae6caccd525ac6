import { storedDemoUser, storeDemoUser } from "./session";

/** A token handed out by the server's demo endpoint, which exists only under `followgraph serve --demo`. */
export interface DemoSession {
  token: string;
  userId: string;
  expiresAt: string;
}

/** The demo token of `userId` (the server's default demo user when omitted); null when not in demo mode. */
export async function fetchDemoSession(userId?: string): Promise<DemoSession | null> {
  const query = userId === undefined ? "" : `?user=${encodeURIComponent(userId)}`;
  const response = await fetch(`/demo/token${query}`, { headers: { accept: "application/json" } });
  if (response.status === 404) return null;
  if (!response.ok) {
    const body = (await response.json().catch(() => null)) as { error?: string } | null;
    throw new DemoEndpointError(response.status, body?.error ?? `The demo endpoint answered ${response.status}.`);
  }
  return (await response.json()) as DemoSession;
}

/** The demo endpoint answered, with an error: `status` 422 for a user not in the demo graph. */
export class DemoEndpointError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "DemoEndpointError";
  }
}

/**
 * The demo session to start with: the demo user picked last (storedDemoUser), else the server's
 * default. A picked user the demo graph no longer has (a new demo graph) is forgotten.
 */
export async function resumeDemoSession(): Promise<DemoSession | null> {
  const userId = storedDemoUser();
  if (userId !== null) {
    try {
      return await fetchDemoSession(userId);
    } catch (error) {
      // The server unreachable: the choice stays, for when it is back.
      if (!(error instanceof DemoEndpointError) || error.status >= 500) throw error;
      storeDemoUser(null);
    }
  }
  return fetchDemoSession();
}

/** Acts as `userId` from now on, and after a reload. */
export async function switchDemoUser(userId: string): Promise<DemoSession | null> {
  const demo = await fetchDemoSession(userId);
  if (demo) storeDemoUser(demo.userId);
  return demo;
}
