/** Who the app speaks for: a bearer token, and whether it came from the demo endpoint. */
export interface Session {
  token: string;
  demo: boolean;
}

const STORAGE_KEY = "followgraph.token";

// Production tokens are pasted by the user (or, in a real product, issued by your login flow);
// kept in sessionStorage so a reload keeps you signed in but a closed tab does not.
export function storedToken(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(STORAGE_KEY);
  else sessionStorage.setItem(STORAGE_KEY, token);
}

const DEMO_USER_KEY = "followgraph.demoUser";

// Demo mode only: the demo user last picked, kept in localStorage so that a reload (or a new tab)
// acts as them again rather than as the server's default demo user.
export function storedDemoUser(): string | null {
  return localStorage.getItem(DEMO_USER_KEY);
}

export function storeDemoUser(userId: string | null): void {
  if (userId === null) localStorage.removeItem(DEMO_USER_KEY);
  else localStorage.setItem(DEMO_USER_KEY, userId);
}
