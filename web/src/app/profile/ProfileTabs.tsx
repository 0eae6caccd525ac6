import { type KeyboardEvent, type ReactNode, useLayoutEffect, useRef } from "react";

import type { ProfileTab } from "../lists/tabs";

/**
 * The ARIA tabs pattern: a tablist whose selected tab alone is in the Tab order; the arrow keys,
 * Home and End move to another tab and show it (replacing the history entry, so that Back does not
 * walk through every tab passed), and the panel names its tab. On a narrow screen the row scrolls
 * sideways rather than wrapping, the selected tab kept in view.
 */
export function ProfileTabs({
  label,
  tabs,
  selected,
  counts,
  onSelect,
  children,
}: {
  label: string;
  tabs: ProfileTab[];
  selected: string;
  counts: Record<string, number | null>;
  onSelect: (key: string, how: { replace?: boolean; keepScroll?: boolean }) => void;
  children: ReactNode;
}) {
  const list = useRef<HTMLDivElement>(null);
  const buttons = useRef(new Map<string, HTMLButtonElement>());

  useLayoutEffect(() => {
    const element = buttons.current.get(selected);
    const row = list.current;
    if (!element || !row) return;
    const left = element.offsetLeft - row.offsetLeft;
    if (left < row.scrollLeft) row.scrollLeft = left - 12;
    else if (left + element.offsetWidth > row.scrollLeft + row.clientWidth) {
      row.scrollLeft = left + element.offsetWidth - row.clientWidth + 12;
    }
  }, [selected]);

  function onKeyDown(event: KeyboardEvent) {
    const index = tabs.findIndex((tab) => tab.key === selected);
    const next =
      event.key === "ArrowRight"
        ? (index + 1) % tabs.length
        : event.key === "ArrowLeft"
          ? (index - 1 + tabs.length) % tabs.length
          : event.key === "Home"
            ? 0
            : event.key === "End"
              ? tabs.length - 1
              : null;
    if (next === null) return;
    event.preventDefault();
    const key = tabs[next]!.key;
    buttons.current.get(key)?.focus();
    onSelect(key, { replace: true });
  }

  return (
    <>
      <div ref={list} className="tabs" role="tablist" aria-label={label} onKeyDown={onKeyDown}>
        {tabs.map((tab) => {
          const count = counts[tab.key];
          return (
            <button
              key={tab.key}
              ref={(element) => {
                if (element) buttons.current.set(tab.key, element);
                else buttons.current.delete(tab.key);
              }}
              type="button"
              role="tab"
              id={`tab-${tab.key}`}
              aria-selected={tab.key === selected}
              aria-controls="profile-panel"
              tabIndex={tab.key === selected ? 0 : -1}
              data-tab={tab.key}
              onClick={() => onSelect(tab.key, { keepScroll: true })}
            >
              <span className="tab-label">{tab.label}</span>
              {count != null && (
                <span className="tab-count" data-tab-count={tab.key}>
                  {count.toLocaleString()}
                </span>
              )}
            </button>
          );
        })}
      </div>
      <div className="tab-panel" role="tabpanel" id="profile-panel" aria-labelledby={`tab-${selected}`}>
        {children}
      </div>
    </>
  );
}
