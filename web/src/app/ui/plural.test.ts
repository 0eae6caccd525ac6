import { describe, expect, it } from "vitest";

import { countOf, plural } from "./plural";

describe("plural", () => {
  it("is singular for one only", () => {
    expect(plural(1, "fan")).toBe("fan");
    expect(plural(0, "fan")).toBe("fans");
    expect(plural(2, "fan")).toBe("fans");
    expect(plural(1, "Mutual")).toBe("Mutual");
    expect(plural(11, "Mutual")).toBe("Mutuals");
  });

  it("takes an irregular plural", () => {
    expect(plural(1, "person", "people")).toBe("person");
    expect(plural(3, "person", "people")).toBe("people");
  });
});

describe("countOf", () => {
  it("says the count and the noun", () => {
    expect(countOf(1, "fan")).toBe("1 fan");
    expect(countOf(0, "fan")).toBe("0 fans");
    expect(countOf(291, "new fan")).toBe("291 new fans");
    expect(countOf(3538, "fan")).toBe(`${(3538).toLocaleString()} fans`);
    expect(countOf(1, "user")).toBe("1 user");
  });
});
