// GraphiQL, served by the API itself at /graphql: bundled with its Monaco workers, so the page
// loads with no network but the server's.
import "graphiql/setup-workers/vite";
import "graphiql/style.css";
import "@graphiql/plugin-explorer/style.css";

import { explorerPlugin } from "@graphiql/plugin-explorer";
import { createGraphiQLFetcher, type Fetcher, type FetcherOpts, type FetcherParams } from "@graphiql/toolkit";
import { GraphiQL } from "graphiql";
import { type ExecutionResult, GraphQLError, Kind } from "graphql";
import { createClient } from "graphql-ws";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { fetchDemoSession } from "../app/session/demo";
import { EXAMPLE_QUERY } from "./example";

// The server closes a socket with 4401 when a token is needed, 4403 when the one sent is bad or expired.
const UNAUTHORIZED = 4401;
const FORBIDDEN = 4403;

// Subscriptions run over graphql-transport-ws on the same path and origin (ws: or wss:), with the
// bundled graphql-ws client: one socket per subscription, whose connection_init payload is the
// Headers pane, so it carries the same Authorization as the HTTP requests.
function subscriptionUrl(): string {
  const url = new URL("/graphql", location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}

function isSubscription(params: FetcherParams, opts?: FetcherOpts): boolean {
  return (opts?.documentAST?.definitions ?? []).some(
    (d) =>
      d.kind === Kind.OPERATION_DEFINITION &&
      d.operation === "subscription" &&
      (params.operationName ?? undefined) === d.name?.value,
  );
}

/**
 * A socket the server closed (or that never opened), as GraphiQL shows a query's failure: an
 * `errors` result with the reason only. Thrown, it would be shown with the bundle's stack trace.
 * 4401 and 4403 are the WebSocket's 401 (no token, or a bad or expired one): the same code as the
 * HTTP answer to a query with that token.
 */
function closedResult(event: CloseEvent | Event): ExecutionResult {
  if (!(event instanceof CloseEvent)) {
    return { errors: [new GraphQLError("Cannot reach the FollowGraph server over WebSocket.")] };
  }
  const code = event.code === FORBIDDEN || event.code === UNAUTHORIZED ? "UNAUTHENTICATED" : "WEBSOCKET_CLOSED";
  const message = event.reason || `The WebSocket closed (${event.code}).`;
  return { errors: [new GraphQLError(message, { extensions: { code, closeCode: event.code } })] };
}

// A hand-made iterator, not an async generator: GraphiQL's stop button calls return() while a
// next() is pending, which a generator would queue until the next event arrives.
function subscribe(params: FetcherParams, headers: Record<string, unknown>): AsyncIterableIterator<ExecutionResult> {
  const client = createClient({
    url: subscriptionUrl(),
    connectionParams: headers,
    // 4403: the token is bad or expired, and trying again will not change that.
    shouldRetry: (event) => !(event instanceof CloseEvent && event.code === FORBIDDEN),
  });
  // JSON results: their errors are formatted errors, which is all GraphiQL reads of them.
  const results = client.iterate(params) as AsyncIterableIterator<ExecutionResult>;
  let closed: ExecutionResult | null = null;
  const finished = async (): Promise<IteratorReturnResult<undefined>> => {
    await client.dispose();
    return { done: true, value: undefined };
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (closed) return finished();
      try {
        const result = await results.next();
        return result.done ? await finished() : result;
      } catch (error) {
        await client.dispose();
        if (!(error instanceof Event)) throw error;
        // Shown as the last result; the next call ends the subscription.
        closed = closedResult(error);
        return { done: false, value: closed };
      }
    },
    async return() {
      await results.return?.();
      return finished();
    },
  };
}

async function start(): Promise<void> {
  const demo = await fetchDemoSession();
  const headers = demo ? JSON.stringify({ Authorization: `Bearer ${demo.token}` }, null, 2) : "";
  const http = createGraphiQLFetcher({ url: new URL("/graphql", location.href).toString() });
  const fetcher: Fetcher = (params, opts) =>
    isSubscription(params, opts) ? subscribe(params, opts?.headers ?? {}) : http(params, opts);
  const root = document.getElementById("graphiql");
  if (!root) throw new Error("#graphiql is missing from the page");
  createRoot(root).render(
    <StrictMode>
      <GraphiQL
        fetcher={fetcher}
        plugins={[explorerPlugin()]}
        defaultQuery={EXAMPLE_QUERY}
        initialHeaders={headers}
        defaultHeaders={headers}
        defaultEditorToolsVisibility={demo ? "headers" : true}
      />
    </StrictMode>,
  );
}

void start();
