// GraphiQL, served by the API itself at /graphql: bundled with its Monaco workers, so the page
// loads with no network but the server's.
import "graphiql/setup-workers/vite";
import "graphiql/style.css";
import "@graphiql/plugin-explorer/style.css";

import { explorerPlugin } from "@graphiql/plugin-explorer";
import { createGraphiQLFetcher } from "@graphiql/toolkit";
import { GraphiQL } from "graphiql";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

import { fetchDemoSession } from "../app/session/demo";
import { EXAMPLE_QUERY } from "./example";

// Subscriptions run over WebSocket on the same path (graphql-transport-ws, the graphql-ws
// package). The toolkit sends the Headers pane as connection_init's payload, which is where the
// server reads the token: {"Authorization": "Bearer <token>"}.
const SUBSCRIPTION_URL = new URL("/graphql", location.href.replace(/^http/, "ws")).toString();

async function start(): Promise<void> {
  const demo = await fetchDemoSession();
  const headers = demo ? JSON.stringify({ Authorization: `Bearer ${demo.token}` }, null, 2) : "";
  const fetcher = createGraphiQLFetcher({
    url: new URL("/graphql", location.href).toString(),
    subscriptionUrl: SUBSCRIPTION_URL,
  });
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
