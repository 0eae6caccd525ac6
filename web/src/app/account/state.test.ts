import { describe, expect, it } from "vitest";

import { confirmsDeletion, deletedNotice, inactiveScreen } from "./state";

describe("the screen of an account that is off", () => {
  it("is not shown for an active account", () => {
    expect(inactiveScreen("ACTIVE")).toBeNull();
  });

  it("offers Reactivate and Delete to a deactivated account", () => {
    expect(inactiveScreen("DEACTIVATED")).toMatchObject({
      title: "Your account is deactivated",
      canReactivate: true,
      canDelete: true,
    });
  });

  it("says only an admin lifts a suspension, and still offers Delete", () => {
    const screen = inactiveScreen("SUSPENDED")!;
    expect(screen).toMatchObject({ title: "Your account is suspended", canReactivate: false, canDelete: true });
    expect(screen.lines.join(" ")).toMatch(/Only an administrator can lift/);
  });

  it("offers nothing while the account is being deleted", () => {
    expect(inactiveScreen("DELETING")).toMatchObject({ canReactivate: false, canDelete: false });
  });
});

describe("the typed confirmation of a deletion", () => {
  it("takes the user id, with spaces around it or an @ before it", () => {
    for (const typed of ["141", " 141 ", "@141"]) expect(confirmsDeletion(typed, "141")).toBe(true);
  });

  it("refuses anything else: part of the id, another id, nothing", () => {
    for (const typed of ["", "14", "1411", "141x", "@", "Fang Luo"]) expect(confirmsDeletion(typed, "141")).toBe(false);
  });
});

describe("the notice after a deletion", () => {
  it("says the account is gone, or is going when the deletion goes on in the background", () => {
    expect(deletedNotice("141", null)).toMatch(/^Your account @141 has been deleted/);
    expect(deletedNotice("141", "DELETING")).toMatch(/^Your account @141 is being deleted/);
  });
});
