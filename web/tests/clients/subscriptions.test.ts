// viewerEvents over WebSocket with the graphql-ws client and Apollo Client's GraphQLWsLink: each
// subscribes as one demo user, another follows them over HTTP, and the FOLLOW event arrives.
import { ApolloClient, gql, InMemoryCache } from "@apollo/client";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { type Client, createClient } from "graphql-ws";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";

import { BASE, demoToken, graphql } from "./server";

const WS_URL = `${BASE.replace(/^http/, "ws")}/graphql`;
const EVENTS = `subscription ViewerEvents { viewerEvents { eventId kind actor { userId } target { userId } at } }`;
const FOLLOW = `mutation Follow($u: ID!) { follow(input: {userId: $u}) { changed } }`;
const UNFOLLOW = `mutation Unfollow($u: ID!) { unfollow(input: {userId: $u}) { changed } }`;

interface RelationEvent {
  eventId: string;
  kind: string;
  actor: { userId: string };
  target: { userId: string };
  at: string;
}

function wsClient(token: string): Client {
  return createClient({
    url: WS_URL,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: `Bearer ${token}` },
  });
}

// The server registers a subscriber a moment after `subscribe` is sent; a follow made before
// that would not be pushed live (a client that must not miss one resubscribes with `after`).
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** `actor` follows `target` (unfollowing first, so the follow is a change); undone after the test. */
async function follow(actor: string, target: string): Promise<void> {
  const token = await demoToken(actor);
  cleanups.push(async () => void (await graphql(token, UNFOLLOW, { u: target })));
  await graphql(token, FOLLOW, { u: target });
}

async function unfollowFirst(actor: string, target: string): Promise<void> {
  await graphql(await demoToken(actor), UNFOLLOW, { u: target });
}

function expectFollow(event: RelationEvent, actor: string, target: string): void {
  expect(event.kind).toBe("FOLLOW");
  expect(event.actor.userId).toBe(actor);
  expect(event.target.userId).toBe(target);
  expect(event.eventId).toMatch(/^\d+-\d+$/);
  expect(Math.abs(Date.parse(event.at) - Date.now())).toBeLessThan(60_000);
}

describe("graphql-ws", () => {
  it("receives a follow made over HTTP", async () => {
    await unfollowFirst("12", "11");
    const client = wsClient(await demoToken("11"));
    cleanups.push(async () => void (await client.dispose()));
    const events = client.iterate<{ viewerEvents: RelationEvent }>({ query: EVENTS });
    const next = events.next();
    await settle();
    await follow("12", "11");

    const result = await next;

    expect(result.done).toBe(false);
    expectFollow(result.value!.data!.viewerEvents, "12", "11");
    await events.return?.();
  });
});

describe("Apollo Client GraphQLWsLink", () => {
  it("receives a follow made over HTTP", async () => {
    await unfollowFirst("14", "13");
    const ws = wsClient(await demoToken("13"));
    const apollo = new ApolloClient({ link: new GraphQLWsLink(ws), cache: new InMemoryCache() });
    cleanups.push(async () => {
      apollo.stop();
      await ws.dispose();
    });
    const received = new Promise<RelationEvent>((resolve, reject) => {
      const subscription = apollo.subscribe<{ viewerEvents: RelationEvent }>({ query: gql(EVENTS) }).subscribe({
        next: (result) => {
          subscription.unsubscribe();
          if (result.data) resolve(result.data.viewerEvents);
          else reject(new Error(JSON.stringify(result.error)));
        },
        error: reject,
      });
    });
    await settle();
    await follow("14", "13");

    expectFollow(await received, "14", "13");
  });
});
