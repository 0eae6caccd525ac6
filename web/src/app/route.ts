import { useCallback, useEffect, useState } from "react";

/** The page shown: a user's profile and one of its tabs, kept in the URL's hash (#/u/42/fans). */
export interface Route {
  userId: string | null;
  tab: string;
}

export function parseRoute(hash: string): Route {
  const [, u, userId, tab] = hash.replace(/^#/, "").split("/");
  if (u !== "u" || !userId) return { userId: null, tab: "" };
  return { userId: decodeURIComponent(userId), tab: tab ?? "" };
}

export function routeHash(userId: string, tab?: string): string {
  return `#/u/${encodeURIComponent(userId)}${tab ? `/${tab}` : ""}`;
}

export function useRoute(): [Route, (userId: string, tab?: string) => void] {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  const navigate = useCallback((userId: string, tab?: string) => {
    location.hash = routeHash(userId, tab);
  }, []);
  return [route, navigate];
}
