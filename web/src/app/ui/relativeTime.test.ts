import { describe, expect, it } from "vitest";

import { relativeTime } from "./RelativeTime";

const now = new Date("2026-12-05T12:00:00Z");
const ago = (ms: number) => new Date(now.getTime() - ms);
const MIN = 60_000;

describe("relativeTime", () => {
  it("says minutes, hours and days, then the date", () => {
    expect(relativeTime(ago(20_000), now)).toBe("now");
    expect(relativeTime(ago(5 * MIN), now)).toBe("5 min");
    expect(relativeTime(ago(3 * 60 * MIN + 59 * MIN), now)).toBe("3 h");
    expect(relativeTime(ago(6 * 24 * 60 * MIN), now)).toBe("6 d");
    expect(relativeTime(new Date("2026-11-05T12:00:00Z"), now)).toMatch(/Nov 5|5 Nov/);
    expect(relativeTime(new Date("2025-11-05T12:00:00Z"), now)).toMatch(/2025/);
  });
});
