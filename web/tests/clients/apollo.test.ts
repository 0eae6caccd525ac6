// Apollo Client 4 with the app's own cache configuration, against a real server.
import { ApolloClient, gql, HttpLink, InMemoryCache, type TypedDocumentNode } from "@apollo/client";
import { relayStylePagination } from "@apollo/client/utilities";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";

import { createClient } from "../../src/app/apollo/client";
import { apiProblem } from "../../src/app/apollo/errors";
import { FOLLOW, optimisticPayload, UNFOLLOW } from "../../src/app/follow/useFollow";
import { BASE, type Edge, graphql, strangerFan } from "./server";

const OWNER = "1";
const VIEWER = "7";

interface FansData {
  user: {
    id: string;
    fansCount: number;
    fans: { totalCount: number; edges: Edge[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
  };
}

const FANS: TypedDocumentNode<FansData, { after?: string | null }> = gql`
  query Fans($after: String) {
    user(userId: "${OWNER}") {
      id
      fansCount
      fans(first: 10, after: $after) {
        totalCount
        edges { cursor relationship node { id userId relationship fansCount } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
`;

// What the follow buttons know of a user besides the edge's fields: no blocks, mutes or requests.
const STRANGER = {
  followingCount: 0,
  mutualCount: 0,
  isLocked: false,
  viewerRequestedFollow: false,
  requestedFollowViewer: false,
  viewerBlocks: false,
  viewerMutes: false,
  blocksViewer: false,
};

const fan = strangerFan(VIEWER, OWNER, 20);

async function twoPages(client: ApolloClient) {
  const first = await client.query({ query: FANS });
  const query = client.watchQuery({ query: FANS });
  query.subscribe(() => {});
  await query.fetchMore({ variables: { after: first.data!.user.fans.pageInfo.endCursor } });
  return client.readQuery({ query: FANS })!;
}

describe("Apollo Client", () => {
  it("pages with relayStylePagination into one list equal to the server's", async () => {
    const client = createClient(fan.token, `${BASE}/graphql`, WebSocket);
    const merged = await twoPages(client);
    const server = await graphql<{ user: { fans: { edges: Edge[] } } }>(
      fan.token,
      `{ user(userId: "${OWNER}") { fans(first: 20) { edges { cursor } } } }`,
    );
    expect(merged.user.fans.edges.map((e) => e.cursor)).toEqual(server.user.fans.edges.map((e) => e.cursor));
    expect(merged.user.fans.pageInfo.hasNextPage).toBe(true);
  });

  it("keeps every edge right after follow and unfollow, from the cache alone", async () => {
    const client = createClient(fan.token, `${BASE}/graphql`, WebSocket);
    await twoPages(client);
    const edgeOf = () => client.readQuery({ query: FANS })!.user.fans.edges.find((e) => e.cursor === fan.target.cursor)!;
    expect(edgeOf().relationship).toBe("NONE");

    const variables = { userId: fan.target.node.userId };
    const pending = client.mutate({
      mutation: FOLLOW,
      variables,
      optimisticResponse: {
        follow: optimisticPayload({ ...STRANGER, ...fan.target.node, relationship: "NONE" }, "follow", null),
      },
    });
    // The optimistic layer shows the follow before the server answers.
    expect(client.readQuery({ query: FANS }, true)!.user.fans.edges.find((e) => e.cursor === fan.target.cursor)!.relationship).toBe(
      "FOLLOWING",
    );
    const result = await pending;
    expect(result.data!.follow.errors).toEqual([]);
    expect(result.data!.follow.relationship).toBe("FOLLOWING");
    expect(edgeOf().relationship).toBe("FOLLOWING");
    expect(edgeOf().node.fansCount).toBe(fan.target.node.fansCount + 1);

    // The server agrees with what the cache shows.
    const fresh = await createClient(fan.token, `${BASE}/graphql`, WebSocket).query({ query: FANS, variables: {} });
    const page2 = await graphql<FansData>(fan.token, `query($after: String) { user(userId: "${OWNER}") { id fansCount
      fans(first: 20, after: $after) { totalCount edges { cursor relationship node { id userId relationship fansCount } }
      pageInfo { hasNextPage endCursor } } } }`);
    const onServer = page2.user.fans.edges.find((e) => e.cursor === fan.target.cursor)!;
    expect(onServer.relationship).toBe("FOLLOWING");
    expect(fresh.data!.user.fansCount).toBe(page2.user.fansCount);

    await client.mutate({ mutation: UNFOLLOW, variables });
    expect(edgeOf().relationship).toBe("NONE");
  });

  it("goes stale without the FollowEdge type policy (the reason it exists)", async () => {
    const client = new ApolloClient({
      link: new HttpLink({ uri: `${BASE}/graphql`, headers: { authorization: `Bearer ${fan.token}` } }),
      cache: new InMemoryCache({ typePolicies: { User: { fields: { fans: relayStylePagination() } } } }),
    });
    await twoPages(client);
    await client.mutate({ mutation: FOLLOW, variables: { userId: fan.target.node.userId } });
    const edge = client.readQuery({ query: FANS })!.user.fans.edges.find((e) => e.cursor === fan.target.cursor)!;
    expect(edge.node.relationship).toBe("FOLLOWING");
    expect(edge.relationship).toBe("NONE");
    await client.mutate({ mutation: UNFOLLOW, variables: { userId: fan.target.node.userId } });
  });

  it("reports errors by code: GraphQL extensions.code and payload errors", async () => {
    const client = createClient(fan.token, `${BASE}/graphql`, WebSocket);
    const bad = await client.query({ query: FANS, variables: { after: "not-a-cursor" }, errorPolicy: "none" }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(apiProblem(bad).code).toBe("BAD_USER_INPUT");
    const self = await client.mutate({ mutation: FOLLOW, variables: { userId: VIEWER } });
    expect(self.data!.follow.errors.map((e) => e.code)).toEqual(["CANNOT_FOLLOW_SELF"]);
    const expired = createClient("not.a.token", `${BASE}/graphql`, WebSocket);
    const denied = await expired.query({ query: FANS }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(apiProblem(denied).code).toBe("UNAUTHENTICATED");
  });
});
