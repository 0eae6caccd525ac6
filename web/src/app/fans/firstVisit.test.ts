import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { isFirstVisit, noteVisit } from "./firstVisit";

beforeEach(() => {
  const items = new Map<string, string>();
  vi.stubGlobal("localStorage", {
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => items.set(key, value),
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("a first visit", () => {
  it("is one where the server counts every fan as new, in a browser that never saw the count", () => {
    expect(isFirstVisit("42", 291, 291)).toBe(true);
    expect(isFirstVisit("42", 0, 0)).toBe(true);
    // Marked seen elsewhere: the count is real.
    expect(isFirstVisit("42", 3, 291)).toBe(false);
  });

  it("is over once noted: a count equal to the fans count is then real (every fan came since)", () => {
    noteVisit("42");
    expect(isFirstVisit("42", 2, 2)).toBe(false);
    expect(isFirstVisit("7", 2, 2)).toBe(true);
  });
});
