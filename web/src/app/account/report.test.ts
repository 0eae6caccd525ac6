import { describe, expect, it } from "vitest";

import type { ImportStatus } from "./files";
import { importProgress, importSummary, modeText, unlistedProblems } from "./report";

const status = (fields: Partial<ImportStatus>): ImportStatus => ({
  state: "done",
  list: "following",
  mode: "merge",
  rows: 0,
  applied: 0,
  failed: 0,
  removed: 0,
  problems: [],
  ...fields,
});

describe("an import's progress and summary", () => {
  it("counts the rows applied and refused of the file's rows", () => {
    const running = status({ state: "running", list: "blocks", rows: 1200, applied: 480, failed: 20 });
    expect(importProgress(running)).toEqual({ done: 500, total: 1200 });
    expect(importSummary(running)).toBe("Importing into whom you block: 500 of 1,200 rows done.");
  });

  it("says what a finished merge did, and an overwrite's removals", () => {
    expect(importSummary(status({ rows: 5, applied: 2, failed: 3 }))).toBe(
      "The import into whom you follow is done: 5 rows, 2 applied, 3 could not be applied.",
    );
    expect(importSummary(status({ list: "mutes", mode: "overwrite", rows: 1, applied: 1, removed: 4 }))).toBe(
      "The import into whom you mute is done: 1 row, 1 applied, 4 removed.",
    );
  });

  it("says an import cut short or failed, and what to do", () => {
    expect(importSummary(status({ state: "interrupted" }))).toMatch(/cut short .* Import the file again/);
    expect(importSummary(status({ state: "failed", list: null }))).toBe(
      "The import failed on the server; some rows may have been applied. Try again later.",
    );
  });

  it("says how many refused rows the server did not list (it lists 100)", () => {
    const problems = Array.from({ length: 100 }, (_, i) => ({
      line: i + 2,
      address: `x${i}@elsewhere.example`,
      reason: "an account of another service",
    }));
    expect(unlistedProblems(status({ failed: 100, problems }))).toBeNull();
    expect(unlistedProblems(status({ failed: 130, problems }))).toBe("And 30 more rows not listed here.");
  });
});

describe("the modes, explained", () => {
  it("names the list and what overwrite ends", () => {
    expect(modeText("merge", "following")).toMatch(/^Adds the file’s accounts to whom you follow/);
    expect(modeText("overwrite", "following")).toMatch(/is unfollowed\.$/);
    expect(modeText("overwrite", "blocks")).toMatch(/whom you block exactly the file: .* is unblocked\.$/);
    expect(modeText("overwrite", "mutes")).toMatch(/is unmuted\.$/);
  });
});
