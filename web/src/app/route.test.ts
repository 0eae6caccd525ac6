import { describe, expect, it } from "vitest";

import { parseRoute, profileHash, searchHash } from "./route";

describe("routes", () => {
  it("reads profiles, settings and searches from the hash", () => {
    expect(parseRoute("")).toEqual({ page: "profile", userId: null, tab: "" });
    expect(parseRoute(profileHash("a b", "fans"))).toEqual({ page: "profile", userId: "a b", tab: "fans" });
    expect(parseRoute("#/settings/blocked")).toEqual({ page: "settings", section: "blocked" });
    expect(parseRoute(searchHash(" Jing Xu/李 "))).toEqual({ page: "search", query: "Jing Xu/李" });
    expect(parseRoute("#/search")).toEqual({ page: "search", query: "" });
  });

  it("takes a stray percent sign as it is", () => {
    expect(parseRoute("#/search/100%")).toEqual({ page: "search", query: "100%" });
    expect(parseRoute("#/u/50%/fans")).toEqual({ page: "profile", userId: "50%", tab: "fans" });
  });
});
