import { useSyncExternalStore } from "react";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const exactFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "short" });
const dayFormat = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

/** "now", "5 min", "3 h", "6 d", then the date ("Nov 5", or "Nov 5, 2025" in another year). */
export function relativeTime(at: Date, now: Date): string {
  const ago = now.getTime() - at.getTime();
  if (ago < MINUTE) return "now";
  if (ago < HOUR) return `${Math.floor(ago / MINUTE)} min`;
  if (ago < DAY) return `${Math.floor(ago / HOUR)} h`;
  if (ago < 7 * DAY) return `${Math.floor(ago / DAY)} d`;
  return at.getFullYear() === now.getFullYear() ? dayFormat.format(at) : dateFormat.format(at);
}

// One clock for every time shown: a tick a minute re-renders them all.
let now = new Date();
const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | undefined;

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  timer ??= setInterval(() => {
    now = new Date();
    for (const l of listeners) l();
  }, MINUTE);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

/**
 * When something happened, relative to now ("3 h"), with the exact time on hover and on focus
 * (the title, also drawn as a tooltip while focused): a <time> with its machine-readable datetime.
 */
export function RelativeTime({ iso, label }: { iso: string; label: string }) {
  const current = useSyncExternalStore(subscribe, () => now);
  const at = new Date(iso);
  const exact = `${label} ${exactFormat.format(at)}`;
  return (
    <time className="time" dateTime={iso} title={exact} data-exact={exact} tabIndex={0}>
      {relativeTime(at, current)}
    </time>
  );
}
