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
 * The demo session to start with: the user `picked` (?user= in the page's URL), else the demo
 * user picked last (storedDemoUser), else the server's default. A user the demo graph does not
 * have (a new demo graph, a mistyped link) is forgotten.
 */
export async function resumeDemoSession(picked?: string | null): Promise<DemoSession | null> {
  for (const userId of [picked ?? null, storedDemoUser()]) {
    if (userId === null) continue;
    try {
      const demo = await fetchDemoSession(userId);
      if (demo) storeDemoUser(demo.userId);
      return demo;
    } catch (error) {
      // The server unreachable: the choice stays, for when it is back.
      if (!(error instanceof DemoEndpointError) || error.status >= 500) throw error;
      if (userId === storedDemoUser()) storeDemoUser(null);
    }
  }
  return fetchDemoSession();
}

/** The demo user a link asks for (?user=42), taken out of the address so that it is used once. */
export function takeLinkedDemoUser(): string | null {
  const url = new URL(location.href);
  const userId = url.searchParams.get("user");
  if (userId === null) return null;
  url.searchParams.delete("user");
  history.replaceState(history.state, "", url);
  return userId.trim() || null;
}

/** Acts as `userId` from now on, and after a reload. */
export async function switchDemoUser(userId: string): Promise<DemoSession | null> {
  const demo = await fetchDemoSession(userId);
  if (demo) storeDemoUser(demo.userId);
  return demo;
}
