// viewerEvents with the graphql-ws client (createClient) against a real server, over `ws`.
import { type Client, createClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";

import {
  demoToken,
  EVENT_FIELDS,
  type RelationEvent,
  setFollow,
  untilSubscriptions,
  WS_URL,
} from "./server";

const VIEWER = "501";
const FAN = "502";
const OTHER_FAN = "503";

const VIEWER_EVENTS = `subscription ViewerEvents($after: String) { viewerEvents(after: $after) { ${EVENT_FIELDS} } }`;

const tokens: Record<string, string> = {};

beforeAll(async () => {
  for (const user of [VIEWER, FAN, OTHER_FAN]) tokens[user] = await demoToken(user);
  // A known start: neither fan follows the viewer.
  for (const fan of [FAN, OTHER_FAN]) await setFollow(tokens[fan]!, VIEWER, false);
});

afterAll(async () => {
  for (const fan of [FAN, OTHER_FAN]) await setFollow(tokens[fan]!, VIEWER, false);
});

function connect(token: string, options: { retryAttempts?: number } = {}): Client {
  return createClient({
    url: WS_URL,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: `Bearer ${token}` },
    ...options,
  });
}

/** One viewerEvents subscription: what it received, in order, and how it ended. */
class Listener {
  readonly events: RelationEvent[] = [];
  failure: unknown = null;
  private readonly stop: () => void;
  private wake: () => void = () => {};

  constructor(client: Client, after?: string) {
    this.stop = client.subscribe<{ viewerEvents: RelationEvent }>(
      { query: VIEWER_EVENTS, variables: { after: after ?? null } },
      {
        next: (result) => {
          if (result.errors) this.failure = result.errors;
          else if (result.data) this.events.push(result.data.viewerEvents);
          this.wake();
        },
        error: (error) => {
          this.failure = error;
          this.wake();
        },
        complete: () => this.wake(),
      },
    );
  }

  /** Wait until `count` events arrived (or the subscription failed), at most `timeoutMs`. */
  async take(count: number, timeoutMs = 5_000): Promise<RelationEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.events.length < count && this.failure === null && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
    }
    if (this.failure !== null) throw new Error(`the subscription failed: ${describe_(this.failure)}`);
    expect(this.events.length, "events received").toBeGreaterThanOrEqual(count);
    return this.events.slice(0, count);
  }

  async failed(timeoutMs = 5_000): Promise<unknown> {
    const deadline = Date.now() + timeoutMs;
    while (this.failure === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.failure;
  }

  close(): void {
    this.stop();
  }
}

function describe_(failure: unknown): string {
  if (failure && typeof failure === "object" && "code" in failure) {
    return `close ${(failure as { code: number }).code} ${(failure as { reason?: string }).reason ?? ""}`;
  }
  return JSON.stringify(failure);
}

describe("graphql-ws", () => {
  it("delivers a follow of the viewer made over HTTP by another user", async () => {
    const client = connect(tokens[VIEWER]!);
    try {
      const listener = new Listener(client);
      await untilSubscriptions(1);
      expect(await setFollow(tokens[FAN]!, VIEWER, true)).toBe(true);

      const [event] = await listener.take(1);
      expect(event).toMatchObject({ kind: "FOLLOW", actor: { userId: FAN }, target: { userId: VIEWER } });
      expect(event!.eventId).toMatch(/^\d+-\d+$/);
      listener.close();
    } finally {
      await client.dispose();
      await setFollow(tokens[FAN]!, VIEWER, false);
    }
    await untilSubscriptions(0);
  });

  it("is refused with close 4403 for a bad token", async () => {
    const client = connect("not-a-token", { retryAttempts: 0 });
    try {
      const failure = await new Listener(client).failed();
      expect(failure).toMatchObject({ code: 4403 });
      expect((failure as { reason: string }).reason).not.toBe("");
    } finally {
      await client.dispose();
    }
  });

  it("reconnects with `after` and replays what it missed, then goes live, without a duplicate", async () => {
    let client = connect(tokens[VIEWER]!);
    const first = new Listener(client);
    await untilSubscriptions(1);
    await setFollow(tokens[FAN]!, VIEWER, true);
    const [seen] = await first.take(1);
    first.close();
    await client.dispose();
    await untilSubscriptions(0);

    // Missed while away: the other fan follows, the fan unfollows.
    await setFollow(tokens[OTHER_FAN]!, VIEWER, true);
    await setFollow(tokens[FAN]!, VIEWER, false);

    client = connect(tokens[VIEWER]!);
    try {
      const again = new Listener(client, seen!.eventId);
      const replayed = await again.take(2);
      await untilSubscriptions(1);
      await setFollow(tokens[FAN]!, VIEWER, true);
      const all = await again.take(3);
      await new Promise((resolve) => setTimeout(resolve, 300));
      again.close();

      expect(replayed.map((e) => [e.kind, e.actor.userId])).toEqual([
        ["FOLLOW", OTHER_FAN],
        ["UNFOLLOW", FAN],
      ]);
      expect(all[2]).toMatchObject({ kind: "FOLLOW", actor: { userId: FAN } });
      expect(again.events, "nothing more, nothing twice").toHaveLength(3);
      const ids = [seen!, ...again.events].map((e) => e.eventId);
      expect(new Set(ids).size).toBe(4);
    } finally {
      await client.dispose();
    }
    await untilSubscriptions(0);
  });
});
