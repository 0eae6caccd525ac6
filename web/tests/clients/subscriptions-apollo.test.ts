// viewerEvents with Apollo Client 4 over GraphQLWsLink (graphql-ws underneath), against a real server.
import { ApolloClient, gql, InMemoryCache, type TypedDocumentNode } from "@apollo/client";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { createClient } from "graphql-ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";

import { demoToken, type RelationEvent, setFollow, untilSubscriptions, WS_URL } from "./server";

const VIEWER = "511";
const FAN = "512";

const VIEWER_EVENTS: TypedDocumentNode<{ viewerEvents: RelationEvent }, Record<string, never>> = gql`
  subscription ViewerEvents {
    viewerEvents { eventId kind actor { userId } target { userId } }
  }
`;

let viewerToken = "";
let fanToken = "";

beforeAll(async () => {
  viewerToken = await demoToken(VIEWER);
  fanToken = await demoToken(FAN);
  await setFollow(fanToken, VIEWER, false);
});

afterAll(async () => {
  await setFollow(fanToken, VIEWER, false);
});

describe("Apollo Client with GraphQLWsLink", () => {
  it("delivers a follow of the viewer made over HTTP by another user", async () => {
    const wsClient = createClient({
      url: WS_URL,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: `Bearer ${viewerToken}` },
    });
    const client = new ApolloClient({ link: new GraphQLWsLink(wsClient), cache: new InMemoryCache() });
    const received: RelationEvent[] = [];
    const failures: unknown[] = [];
    const subscription = client.subscribe({ query: VIEWER_EVENTS }).subscribe({
      next: (result) => {
        if (result.error) failures.push(result.error);
        if (result.data) received.push(result.data.viewerEvents);
      },
      error: (error) => failures.push(error),
    });
    try {
      await untilSubscriptions(1);
      expect(await setFollow(fanToken, VIEWER, true)).toBe(true);
      await expect.poll(() => received.length + failures.length, { timeout: 5_000 }).toBeGreaterThan(0);

      expect(failures).toEqual([]);
      expect(received[0]).toMatchObject({
        kind: "FOLLOW",
        actor: { userId: FAN },
        target: { userId: VIEWER },
      });
      expect(received[0]!.eventId).toMatch(/^\d+-\d+$/);
    } finally {
      subscription.unsubscribe();
      await wsClient.dispose();
    }
    await untilSubscriptions(0);
  });
});
