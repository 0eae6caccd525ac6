import { CombinedGraphQLErrors, ServerError, ServerParseError } from "@apollo/client/errors";
import { describe, expect, it } from "vitest";

import { apiProblem, payloadHasError, UNREACHABLE, userErrorText } from "./errors";

const response = (status: number) => new Response("<html>Bad Gateway</html>", { status });

describe("apiProblem", () => {
  it("says the server cannot be reached when fetch fails, and that a retry may help", () => {
    for (const failure of [new TypeError("Failed to fetch"), new TypeError("fetch failed")]) {
      expect(apiProblem(failure)).toEqual({ code: "NETWORK", message: UNREACHABLE, retryable: true });
    }
    expect(UNREACHABLE).toBe("Cannot reach the FollowGraph server.");
  });

  it("makes 5xx answers retryable, and a 401 an expired session", () => {
    const down = apiProblem(new ServerError("Response not successful", { response: response(503), bodyText: "" }));
    expect(down).toMatchObject({ code: "HTTP_503", retryable: true });
    expect(down.message).not.toMatch(/Response not successful/);
    const expired = apiProblem(new ServerError("Unauthorized", { response: response(401), bodyText: "" }));
    expect(expired).toEqual({ code: "UNAUTHENTICATED", message: "Your session has expired." });
    const bad = apiProblem(new ServerError("Bad Request", { response: response(400), bodyText: "" }));
    expect(bad.retryable).toBeUndefined();
  });

  it("makes an answer that is not JSON retryable", () => {
    const problem = apiProblem(
      new ServerParseError(new SyntaxError("Unexpected token <"), { response: response(200), bodyText: "<html>" }),
    );
    expect(problem).toMatchObject({ code: "BAD_RESPONSE", retryable: true });
  });

  it("keeps the API's codes; only internal errors and failures of the moment are worth a retry", () => {
    const input = new CombinedGraphQLErrors({
      data: null,
      errors: [{ message: "first must be at most 100", extensions: { code: "BAD_USER_INPUT" } }],
    });
    expect(apiProblem(input)).toEqual({ code: "BAD_USER_INPUT", message: "first must be at most 100" });
    const internal = new CombinedGraphQLErrors({
      data: null,
      errors: [{ message: "boom", extensions: { code: "INTERNAL_SERVER_ERROR", requestId: "r-1" } }],
    });
    expect(apiProblem(internal)).toEqual({
      code: "INTERNAL_SERVER_ERROR",
      message: "Something went wrong on the server.",
      requestId: "r-1",
      retryable: true,
    });
    const unavailable = new CombinedGraphQLErrors({
      data: null,
      errors: [{ message: "out of reach", extensions: { code: "SERVICE_UNAVAILABLE", requestId: "r-2" } }],
    });
    expect(apiProblem(unavailable)).toEqual({
      code: "SERVICE_UNAVAILABLE",
      message: "The FollowGraph server cannot reach its storage for a moment.",
      requestId: "r-2",
      retryable: true,
    });
    const unconfirmed = new CombinedGraphQLErrors({
      data: null,
      errors: [{ message: "not confirmed", extensions: { code: "WRITE_NOT_REPLICATED" } }],
    });
    expect(apiProblem(unconfirmed)).toMatchObject({ code: "WRITE_NOT_REPLICATED", retryable: true });
  });

  it("shows any other error as it is, without a retry", () => {
    expect(apiProblem(new Error("odd"))).toEqual({ code: "UNKNOWN", message: "odd" });
  });
});

describe("userErrorText", () => {
  it("explains BLOCKED", () => {
    expect(userErrorText({ code: "BLOCKED", message: "'42' and '105': one of them blocks the other." })).toMatch(
      /blocks/,
    );
  });
});

describe("payloadHasError", () => {
  const inactive = { code: "ACCOUNT_INACTIVE", message: "Your account is deactivated." };

  it("finds a code in a mutation's payload, or in one of a batch's payloads", () => {
    expect(payloadHasError({ follow: { user: null, errors: [inactive] } }, "ACCOUNT_INACTIVE")).toBe(true);
    expect(payloadHasError({ followMany: [{ errors: [] }, { errors: [inactive] }] }, "ACCOUNT_INACTIVE")).toBe(true);
  });

  it("is false for payloads without it, other codes, and answers with no data", () => {
    expect(payloadHasError({ follow: { errors: [] } }, "ACCOUNT_INACTIVE")).toBe(false);
    expect(payloadHasError({ follow: { errors: [{ code: "BLOCKED" }] } }, "ACCOUNT_INACTIVE")).toBe(false);
    expect(payloadHasError({ markFansSeen: { seenAt: "2026-01-01T00:00:00.000Z" } }, "ACCOUNT_INACTIVE")).toBe(false);
    expect(payloadHasError({ follow: null }, "ACCOUNT_INACTIVE")).toBe(false);
    expect(payloadHasError(null, "ACCOUNT_INACTIVE")).toBe(false);
    expect(payloadHasError(undefined, "ACCOUNT_INACTIVE")).toBe(false);
  });
});
