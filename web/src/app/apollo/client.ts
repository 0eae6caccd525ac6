import { ApolloClient, ApolloLink, HttpLink } from "@apollo/client";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { isMutationOperation, isSubscriptionOperation } from "@apollo/client/utilities";
import { createClient as createWsClient } from "graphql-ws";
import { tap } from "rxjs";

import { createCache } from "./cache";
import { payloadHasError } from "./errors";

// The server closes a socket whose token is bad or expired with 4403: retrying will not help.
const FORBIDDEN = 4403;

/** The graphql-transport-ws endpoint: the API's own path, over ws: (wss: behind https). */
export function subscriptionUrl(uri: string, base?: string): string {
  const url = new URL(uri, base);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}

/**
 * One client per signed-in viewer. Relationships and `newFansCount` are relative to the viewer,
 * so a new viewer gets a new, empty cache rather than another viewer's view of the graph.
 * Queries and mutations go over HTTP; subscriptions over one WebSocket (graphql-ws), opened on the
 * first subscription and closed after the last, with the token in `connection_init`'s payload.
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
  const http = ApolloLink.from([inactive, new HttpLink({ uri, headers: { authorization } })]);
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
  });
}
