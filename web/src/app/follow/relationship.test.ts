import { describe, expect, it } from "vitest";

import { nextRelationship, nextState, type RelationState } from "./relationship";

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

describe("nextState", () => {
  const plain: RelationState = {
    relationship: "NONE",
    isLocked: false,
    viewerRequestedFollow: false,
    requestedFollowViewer: false,
    viewerBlocks: false,
    viewerMutes: false,
    blocksViewer: false,
  };

  it("ends only the user's follow of the viewer on removeFan", () => {
    expect(nextState({ ...plain, relationship: "MUTUAL" }, "removeFan").state.relationship).toBe("FOLLOWING");
    expect(nextState({ ...plain, relationship: "FOLLOWED_BY" }, "removeFan").state.relationship).toBe("NONE");
    expect(nextState({ ...plain, relationship: "FOLLOWING" }, "removeFan").state.relationship).toBe("FOLLOWING");
  });

  it("ends both follows and both requests on a block, and keeps them ended on unblock", () => {
    for (const relationship of ["NONE", "FOLLOWING", "FOLLOWED_BY", "MUTUAL"] as const) {
      const blocked = nextState({ ...plain, relationship, requestedFollowViewer: true }, "block").state;
      expect(blocked).toMatchObject({ relationship: "NONE", viewerBlocks: true, requestedFollowViewer: false });
      expect(nextState(blocked, "unblock").state).toEqual({ ...blocked, viewerBlocks: false });
    }
    expect(nextState({ ...plain, viewerRequestedFollow: true }, "block").state.viewerRequestedFollow).toBe(false);
  });

  it("makes a follow of a locked account a request, which an unfollow withdraws", () => {
    const requested = nextState({ ...plain, isLocked: true }, "follow");
    expect(requested).toEqual({ state: { ...plain, isLocked: true, viewerRequestedFollow: true }, pending: true });
    expect(nextState(requested.state, "follow").state).toBe(requested.state);
    expect(nextState(requested.state, "unfollow").state).toEqual({ ...plain, isLocked: true });
  });

  it("predicts no follow while either user blocks the other (the server answers BLOCKED)", () => {
    expect(nextState({ ...plain, blocksViewer: true }, "follow").state.relationship).toBe("NONE");
    expect(nextState({ ...plain, viewerBlocks: true }, "follow").state.relationship).toBe("NONE");
  });

  it("turns an accepted request into a fan, and a rejected one into nothing", () => {
    const asked = { ...plain, requestedFollowViewer: true };
    expect(nextState(asked, "acceptFollowRequest").state).toMatchObject({
      relationship: "FOLLOWED_BY",
      requestedFollowViewer: false,
    });
    expect(nextState({ ...asked, relationship: "FOLLOWING" }, "acceptFollowRequest").state.relationship).toBe("MUTUAL");
    expect(nextState(asked, "rejectFollowRequest").state).toEqual(plain);
  });

  it("mutes without touching the graph", () => {
    const muted = nextState({ ...plain, relationship: "MUTUAL" }, "mute").state;
    expect(muted).toEqual({ ...plain, relationship: "MUTUAL", viewerMutes: true });
    expect(nextState(muted, "unmute").state.viewerMutes).toBe(false);
  });
});
