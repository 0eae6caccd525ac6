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
    throw new Error(body?.error ?? `The demo endpoint answered ${response.status}.`);
  }
  return (await response.json()) as DemoSession;
}
