// GraphiQL, served by the API itself at /graphql: bundled with its Monaco workers, so the page
// loads with no network but the server's.
import "graphiql/setup-workers/vite";
import "graphiql/style.css";
import "@graphiql/plugin-explorer/style.css";

import { explorerPlugin } from "@graphiql/plugin-explorer";
import { createGraphiQLFetcher, type Fetcher, type FetcherOpts, type FetcherParams } from "@graphiql/toolkit";
import { GraphiQL } from "graphiql";
import { type ExecutionResult, Kind } from "graphql";
import { createClient } from "graphql-ws";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { fetchDemoSession } from "../app/session/demo";
import { EXAMPLE_QUERY } from "./example";

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
  const finished = async (): Promise<IteratorReturnResult<undefined>> => {
    await client.dispose();
    return { done: true, value: undefined };
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      try {
        const result = await results.next();
        return result.done ? await finished() : result;
      } catch (error) {
        await client.dispose();
        if (error instanceof CloseEvent) throw new Error(`The socket closed: ${error.code} ${error.reason}`.trim());
        throw error;
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
