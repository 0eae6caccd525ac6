import { CombinedGraphQLErrors, ServerError, ServerParseError } from "@apollo/client/errors";

/** A failure the UI can show: the API's `extensions.code` (or HTTP status) and a message. */
export interface ApiProblem {
  code: string;
  message: string;
  requestId?: string;
  /** Trying the same request again may work: the server was unreachable, down or failed. */
  retryable?: boolean;
}

export const UNREACHABLE = "Cannot reach the FollowGraph server.";
const UNAVAILABLE = "The FollowGraph server is not answering right now.";
const UNREADABLE = "The FollowGraph server sent an answer the app cannot read.";
/** Codes of failures of the moment: the same request sent again shortly is expected to work. */
const RETRY_SOON: Record<string, string> = {
  SERVICE_UNAVAILABLE: "The FollowGraph server cannot reach its storage for a moment.",
  WRITE_NOT_REPLICATED: "Your change was made but not yet confirmed.",
};

/** fetch() rejects with a TypeError ("Failed to fetch", "fetch failed", ...) when no answer came. */
export function isNetworkFailure(error: unknown): boolean {
  return error instanceof TypeError;
}

/** What went wrong with a query or mutation, by the codes the API documents (README, Errors). */
export function apiProblem(error: unknown): ApiProblem {
  if (CombinedGraphQLErrors.is(error)) {
    const first = error.errors[0];
    const extensions = (first?.extensions ?? {}) as { code?: string; requestId?: string };
    const code = extensions.code ?? "GRAPHQL_ERROR";
    if (code === "INTERNAL_SERVER_ERROR") {
      return {
        code,
        message: "Something went wrong on the server.",
        requestId: extensions.requestId,
        retryable: true,
      };
    }
    const soon = RETRY_SOON[code];
    if (soon !== undefined) return { code, message: soon, requestId: extensions.requestId, retryable: true };
    return { code, message: first?.message ?? error.message };
  }
  if (ServerError.is(error)) {
    // The API answers a bad or expired token with HTTP 401 and an UNAUTHENTICATED error.
    if (error.statusCode === 401) return { code: "UNAUTHENTICATED", message: "Your session has expired." };
    // 502, 503, 504: a proxy in front of the server, or the server restarting.
    if (error.statusCode >= 500) {
      return { code: `HTTP_${error.statusCode}`, message: `${UNAVAILABLE} (HTTP ${error.statusCode})`, retryable: true };
    }
    return { code: `HTTP_${error.statusCode}`, message: error.message };
  }
  if (ServerParseError.is(error)) return { code: "BAD_RESPONSE", message: UNREADABLE, retryable: true };
  if (isNetworkFailure(error)) return { code: "NETWORK", message: UNREACHABLE, retryable: true };
  return { code: "UNKNOWN", message: error instanceof Error ? error.message : String(error) };
}

/** A user error from a mutation payload's `errors { code message }`. */
export interface UserError {
  code: string;
  message: string;
}

const USER_ERROR_TEXT: Record<string, string> = {
  RATE_LIMITED: "You are following too many people too fast. Try again later.",
  USER_NOT_FOUND: "That user no longer exists.",
  CANNOT_FOLLOW_SELF: "You cannot follow yourself.",
  BLOCKED: "You cannot follow each other: one of you blocks the other.",
};

/** The sentence to show for a payload's first user error. */
export function userErrorText(error: UserError): string {
  // RATE_LIMITED's own message says when to retry: keep it.
  if (error.code === "RATE_LIMITED") return error.message || USER_ERROR_TEXT.RATE_LIMITED!;
  return USER_ERROR_TEXT[error.code] ?? error.message;
}

/**
 * Whether a mutation's answer holds a payload (or, for a batch such as followMany, a payload in a
 * list) whose `errors` has `code`: ACCOUNT_INACTIVE says the viewer's account went off meanwhile.
 */
export function payloadHasError(data: unknown, code: string): boolean {
  if (typeof data !== "object" || data === null) return false;
  const payloads = Object.values(data).flatMap((value: unknown) => (Array.isArray(value) ? value : [value]));
  return payloads.some((payload: unknown) => {
    const errors = (payload as { errors?: unknown } | null)?.errors;
    return Array.isArray(errors) && errors.some((error) => (error as { code?: unknown } | null)?.code === code);
  });
}
