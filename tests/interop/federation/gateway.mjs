// @apollo/gateway in front of the subgraphs named on the command line, composing their
// _service { sdl } at start (IntrospectAndCompose), forwarding each request's Authorization.
// node gateway.mjs PORT NAME=URL [NAME=URL...]; prints "ready URL".
import { ApolloGateway, IntrospectAndCompose, RemoteGraphQLDataSource } from "@apollo/gateway";
import { ApolloServer } from "@apollo/server";
import { startStandaloneServer } from "@apollo/server/standalone";

const [port, ...named] = process.argv.slice(2);
const subgraphs = named.map((arg) => {
  const [name, url] = arg.split(/=(.*)/s);
  return { name, url };
});

// The viewer's bearer token reaches every subgraph: FollowGraph's viewer-relative fields
// (relationship, viewerIsFollowing, ...) are the token's user's, as when it is asked directly.
class ForwardAuthorization extends RemoteGraphQLDataSource {
  willSendRequest({ request, context }) {
    if (context.authorization) {
      request.http.headers.set("authorization", context.authorization);
    }
  }
}

const gateway = new ApolloGateway({
  supergraphSdl: new IntrospectAndCompose({ subgraphs }),
  buildService: ({ url }) => new ForwardAuthorization({ url }),
});

const server = new ApolloServer({ gateway });
const { url } = await startStandaloneServer(server, {
  listen: { host: "127.0.0.1", port: Number(port) },
  context: async ({ req }) => ({ authorization: req.headers.authorization }),
});
console.log(`ready ${url}`);
