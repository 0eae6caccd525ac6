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
