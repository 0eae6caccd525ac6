import { ApolloClient, HttpLink } from "@apollo/client";

import { createCache } from "./cache";

/**
 * One client per signed-in viewer. Relationships and `newFansCount` are relative to the viewer,
 * so a new viewer gets a new, empty cache rather than another viewer's view of the graph.
 */
export function createClient(token: string, uri = "/graphql"): ApolloClient {
  return new ApolloClient({
    link: new HttpLink({ uri, headers: { authorization: `Bearer ${token}` } }),
    cache: createCache(),
  });
}
