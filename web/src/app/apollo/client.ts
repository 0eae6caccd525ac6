import { ApolloClient, ApolloLink, DocumentTransform, HttpLink } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { isMutationOperation, isSubscriptionOperation } from "@apollo/client/utilities";
import {
  generatePersistedQueryIdsAtRuntime,
  generatePersistedQueryIdsFromManifest,
  sortTopLevelDefinitions,
} from "@apollo/persisted-query-lists";
import { type DocumentNode, getOperationAST } from "graphql";
import { createClient as createWsClient } from "graphql-ws";
import { tap } from "rxjs";

import { createCache } from "./cache";
import { payloadHasError } from "./errors";

// The server closes a socket whose token is bad or expired with 4403: retrying will not help.
const FORBIDDEN = 4403;

// The app's operations with their ids, as the build wrote them (persisted-query-manifest.config.json):
// loaded from the start, in a chunk of its own, while the page loads the rest.
const manifest = import("../../../persisted-query-manifest.json");

/**
 * Queries and mutations go as their ids alone (trusted documents): a server that keeps to the
 * manifest knows them, and one that does not answers PersistedQueryNotFound, to which the link
 * sends the document with its id (automatic persisted queries). That document must be the
 * manifest's, byte for byte, since the server checks the id is its SHA-256: see `manifestOrder`.
 * An operation the manifest lacks (written since the build, or a client of this module's own) gets
 * its id as the manifest would: the SHA-256 of the document, computed here with Web Crypto.
 */
export function persistedQueries(): PersistedQueryLink {
  const fromManifest = generatePersistedQueryIdsFromManifest({ loadManifest: () => manifest });
  const atRuntime = generatePersistedQueryIdsAtRuntime({ sha256 });
  const names = manifest.then(({ operations }) => new Set(operations.map((operation) => operation.name)));
  return new PersistedQueryLink({
    generateHash: async (document: DocumentNode) => {
      const name = getOperationAST(document)?.name?.value;
      return name !== undefined && (await names).has(name)
        ? fromManifest.generateHash(document)
        : atRuntime.generateHash(document);
    },
  });
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * Every document with its operation first and then its fragments by name, as the manifest writes
 * it: sent whole (the link's fallback, a subscription over WebSocket), it is the manifest's body,
 * whatever order the sources interpolated the fragments in.
 */
export const manifestOrder = new DocumentTransform(sortTopLevelDefinitions);

/** The graphql-transport-ws endpoint: the API's own path, over ws: (wss: behind https). */
export function subscriptionUrl(uri: string, base?: string): string {
  const url = new URL(uri, base);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}

/**
 * One client per signed-in viewer. Relationships and `newFansCount` are relative to the viewer,
 * so a new viewer gets a new, empty cache rather than another viewer's view of the graph.
 * Queries and mutations go over HTTP, by their ids; subscriptions over one WebSocket (graphql-ws),
 * opened on the first subscription and closed after the last, with the token in `connection_init`'s payload.
 * Outside a browser, pass a WebSocket implementation (Node: the `ws` package).
 *
 * `onAccountInactive` is called when a mutation is refused with ACCOUNT_INACTIVE: the viewer's
 * account was switched off since the app read it (in another tab, or suspended by an admin).
 */
export function createClient(
  token: string,
  uri = "/graphql",
  webSocketImpl?: unknown,
  onAccountInactive?: () => void,
): ApolloClient {
  const authorization = `Bearer ${token}`;
  const inactive = new ApolloLink((operation, forward) =>
    forward(operation).pipe(
      tap((result) => {
        if (isMutationOperation(operation.query) && payloadHasError(result.data, "ACCOUNT_INACTIVE")) {
          onAccountInactive?.();
        }
      }),
    ),
  );
  const http = ApolloLink.from([inactive, persistedQueries(), new HttpLink({ uri, headers: { authorization } })]);
  const ws = new GraphQLWsLink(
    createWsClient({
      url: subscriptionUrl(uri, globalThis.location?.href),
      connectionParams: { Authorization: authorization },
      webSocketImpl,
      shouldRetry: (event) => (event as { code?: number } | null)?.code !== FORBIDDEN,
    }),
  );
  return new ApolloClient({
    link: ApolloLink.split(({ query }) => isSubscriptionOperation(query), ws, http),
    cache: createCache(),
    documentTransform: manifestOrder,
  });
}
