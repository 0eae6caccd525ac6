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
  keep(sessionStorage, STORAGE_KEY, token);
}

const DEMO_USER_KEY = "followgraph.demoUser";

// Demo mode only: the demo user last picked, kept in localStorage so that a reload (or a new tab)
// acts as them again rather than as the server's default demo user.
export function storedDemoUser(): string | null {
  return localStorage.getItem(DEMO_USER_KEY);
}

export function storeDemoUser(userId: string | null): void {
  keep(localStorage, DEMO_USER_KEY, userId);
}

/** Keeps `value` under `key` in `storage`; null removes it. */
function keep(storage: Storage, key: string, value: string | null): void {
  if (value === null) storage.removeItem(key);
  else storage.setItem(key, value);
}
