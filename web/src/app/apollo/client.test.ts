import { gql } from "@apollo/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";

import { createClient } from "./client";

const FOLLOW = gql`
  mutation Follow($u: ID!) {
    follow(input: { userId: $u }) {
      changed
      errors {
        code
        message
      }
    }
  }
`;

afterEach(() => vi.unstubAllGlobals());

// No subscription runs here: the socket (opened on the first one) never is.

/** A server whose every answer is `data`. */
function answering(data: unknown) {
  vi.stubGlobal(
    "fetch",
    vi.fn(async () => Response.json({ data })),
  );
}

describe("a mutation refused with ACCOUNT_INACTIVE", () => {
  it("tells the app, which reads the viewer again", async () => {
    const inactive = vi.fn();
    const client = createClient("t0ken", "http://api.test/graphql", WebSocket, inactive);
    answering({
      follow: {
        __typename: "FollowPayload",
        changed: false,
        errors: [{ __typename: "UserError", code: "ACCOUNT_INACTIVE", message: "Your account is deactivated." }],
      },
    });
    await client.mutate({ mutation: FOLLOW, variables: { u: "1" } });
    expect(inactive).toHaveBeenCalledOnce();
  });

  it("is not reported for other errors, nor for a query", async () => {
    const inactive = vi.fn();
    const client = createClient("t0ken", "http://api.test/graphql", WebSocket, inactive);
    answering({
      follow: {
        __typename: "FollowPayload",
        changed: false,
        errors: [{ __typename: "UserError", code: "BLOCKED", message: "" }],
      },
    });
    await client.mutate({ mutation: FOLLOW, variables: { u: "1" } });
    // A query whose data happens to look like such a payload is not a refusal.
    answering({ viewer: { __typename: "User", id: "VXNlcjox", errors: [{ code: "ACCOUNT_INACTIVE" }] } });
    await client.query({
      query: gql`
        {
          viewer {
            id
            errors {
              code
            }
          }
        }
      `,
      fetchPolicy: "no-cache",
    });
    expect(inactive).not.toHaveBeenCalled();
  });
});
