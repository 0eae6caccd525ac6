import { useSyncExternalStore } from "react";

/**
 * The page shown, kept in the URL's hash: a user's profile and one of its tabs (#/u/42/fans), the
 * viewer's settings (#/settings, #/settings/blocked), or the people a search finds (#/search/jing).
 */
export type Route =
  | { page: "profile"; userId: string | null; tab: string }
  | { page: "settings"; section: string }
  | { page: "search"; query: string };

export function parseRoute(hash: string): Route {
  const [first, second, third] = hash.replace(/^#\/?/, "").split("/");
  if (first === "settings") return { page: "settings", section: second ?? "" };
  if (first === "search") return { page: "search", query: decoded(second ?? "").trim() };
  if (first !== "u" || !second) return { page: "profile", userId: null, tab: "" };
  return { page: "profile", userId: decoded(second), tab: third ?? "" };
}

/** A part of the address as typed: a stray "%" (a hand-edited link) is taken as it is. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function profileHash(userId: string, tab?: string): string {
  return `#/u/${encodeURIComponent(userId)}${tab ? `/${tab}` : ""}`;
}

export function searchHash(query: string): string {
  return `#/search/${encodeURIComponent(query.trim())}`;
}

export function settingsHash(section?: string): string {
  return `#/settings${section ? `/${section}` : ""}`;
}

// Scroll positions by history entry. The browser's own restoration runs before the page it goes
// back to has rendered its list (a short page), so it lands at the top: the app restores instead,
// once the view says its content is there (restoreScroll).
const POSITIONS_KEY = "followgraph.scroll";
let positions: Record<string, number> = readPositions();
let currentKey = "";
let pending: number | null = null;
const listeners = new Set<() => void>();

function readPositions(): Record<string, number> {
  try {
    return JSON.parse(sessionStorage.getItem(POSITIONS_KEY) ?? "{}") as Record<string, number>;
  } catch {
    return {};
  }
}

let saveTimer: ReturnType<typeof setTimeout> | undefined;
function savePositions(): void {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(() => {
    // The last 50 entries are plenty for going back.
    positions = Object.fromEntries(Object.entries(positions).slice(-50));
    sessionStorage.setItem(POSITIONS_KEY, JSON.stringify(positions));
  }, 200);
}

/** The key of the history entry shown, given to it when it has none (a link the app did not make). */
function entryKey(): string {
  const state = history.state as { key?: string } | null;
  if (state?.key) return state.key;
  const key = Math.random().toString(36).slice(2);
  history.replaceState({ ...state, key }, "");
  return key;
}

function notify(): void {
  for (const listener of listeners) listener();
}

let started = false;
function start(): void {
  if (started) return;
  started = true;
  history.scrollRestoration = "manual";
  currentKey = entryKey();
  pending = positions[currentKey] ?? null;
  window.addEventListener(
    "scroll",
    () => {
      positions[currentKey] = window.scrollY;
      savePositions();
    },
    { passive: true },
  );
  // Back, forward, and links: the entry's own position, or the top for an entry never shown.
  // Browsers differ on whether a link to a fragment fires popstate; hashchange is fired by all.
  const arrived = () => {
    const key = entryKey();
    if (key === currentKey) return;
    currentKey = key;
    pending = positions[key] ?? 0;
    notify();
  };
  window.addEventListener("popstate", arrived);
  window.addEventListener("hashchange", arrived);
}

function subscribe(listener: () => void): () => void {
  start();
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The route of the URL, re-rendering on every change. */
export function useRoute(): Route {
  const hash = useSyncExternalStore(subscribe, () => location.hash);
  return parseRoute(hash);
}

/**
 * Shows `hash`: a new history entry that starts at the top, or with `replace` the same entry,
 * kept where it is scrolled. `keepScroll` keeps a new entry where the page is (a tab switch).
 */
export function navigate(hash: string, { replace = false, keepScroll = false } = {}): void {
  start();
  if (hash === location.hash) return;
  positions[currentKey] = window.scrollY;
  if (replace) {
    history.replaceState({ key: currentKey }, "", hash);
  } else {
    currentKey = Math.random().toString(36).slice(2);
    history.pushState({ key: currentKey }, "", hash);
    if (!keepScroll) pending = 0;
  }
  notify();
}

/**
 * Called by a view once its content is rendered: scrolls to where its history entry was left
 * (as far as the page now goes). A new entry goes to the top at once: `ready` is not needed.
 */
export function restoreScroll(ready: boolean): void {
  if (pending === null || (!ready && pending !== 0)) return;
  const y = pending;
  pending = null;
  window.scrollTo(0, y);
}
