import { describe, expect, it } from "vitest";

import { nextRelationship } from "./relationship";

describe("nextRelationship", () => {
  it("follows the server's rules", () => {
    expect(nextRelationship("NONE", "follow")).toBe("FOLLOWING");
    expect(nextRelationship("FOLLOWED_BY", "follow")).toBe("MUTUAL");
    expect(nextRelationship("FOLLOWING", "follow")).toBe("FOLLOWING");
    expect(nextRelationship("MUTUAL", "unfollow")).toBe("FOLLOWED_BY");
    expect(nextRelationship("FOLLOWING", "unfollow")).toBe("NONE");
    expect(nextRelationship("NONE", "unfollow")).toBe("NONE");
    expect(nextRelationship("SELF", "follow")).toBe("SELF");
  });
});
