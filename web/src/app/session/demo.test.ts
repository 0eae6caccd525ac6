import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { resumeDemoSession, switchDemoUser } from "./demo";
import { storedDemoUser } from "./session";

/** The demo endpoint of a graph holding `users`: the default demo user is 42. */
function demoEndpoint(users: string[]) {
  return vi.fn(async (url: string) => {
    const userId = new URL(url, "http://app.test").searchParams.get("user") ?? "42";
    if (!users.includes(userId)) {
      return Response.json({ error: `There is no user ${userId} in the demo graph.` }, { status: 422 });
    }
    return Response.json({ token: `token-${userId}`, userId, expiresAt: "2030-01-01T00:00:00.000Z" });
  });
}

beforeEach(() => {
  const items = new Map<string, string>();
  vi.stubGlobal("localStorage", {
    getItem: (key: string) => items.get(key) ?? null,
    setItem: (key: string, value: string) => items.set(key, value),
    removeItem: (key: string) => items.delete(key),
  });
});

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("the demo user", () => {
  it("is the server's default until one is picked, then the one picked, after a reload too", async () => {
    vi.stubGlobal("fetch", demoEndpoint(["42", "7"]));
    expect((await resumeDemoSession())?.userId).toBe("42");
    expect((await switchDemoUser("7"))?.userId).toBe("7");
    expect(storedDemoUser()).toBe("7");
    // A reload: the app starts again with what it stored.
    expect((await resumeDemoSession())?.userId).toBe("7");
  });

  it("is forgotten when the demo graph no longer has them", async () => {
    vi.stubGlobal("fetch", demoEndpoint(["42", "7"]));
    await switchDemoUser("7");
    vi.stubGlobal("fetch", demoEndpoint(["42"]));
    expect((await resumeDemoSession())?.userId).toBe("42");
    expect(storedDemoUser()).toBeNull();
  });

  it("stays picked while the server cannot be reached", async () => {
    vi.stubGlobal("fetch", demoEndpoint(["42", "7"]));
    await switchDemoUser("7");
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => {
        throw new TypeError("Failed to fetch");
      }),
    );
    await expect(resumeDemoSession()).rejects.toThrow(TypeError);
    expect(storedDemoUser()).toBe("7");
  });

  it("is not stored when the pick fails", async () => {
    vi.stubGlobal("fetch", demoEndpoint(["42"]));
    await expect(switchDemoUser("9")).rejects.toThrow(/no user 9/);
    expect(storedDemoUser()).toBeNull();
  });
});

describe("a demo user asked for by a link (?user=)", () => {
  it("is acted as, and stays picked", async () => {
    vi.stubGlobal("fetch", demoEndpoint(["42", "7", "9"]));
    await switchDemoUser("7");
    expect((await resumeDemoSession("9"))?.userId).toBe("9");
    expect(storedDemoUser()).toBe("9");
    expect((await resumeDemoSession())?.userId).toBe("9");
  });

  it("falls back to the one picked before when the graph does not have them", async () => {
    vi.stubGlobal("fetch", demoEndpoint(["42", "7"]));
    await switchDemoUser("7");
    expect((await resumeDemoSession("nobody"))?.userId).toBe("7");
    expect(storedDemoUser()).toBe("7");
  });
});
