// The Hive gateway (@graphql-hive/gateway) in front of the subgraphs named on the command line: their
// _service { sdl } composed at start with @apollo/composition into the supergraph it serves, each
// request's Authorization forwarded to the subgraphs.
// node hive.mjs PORT NAME=URL [NAME=URL...]; prints "ready URL".
import { createServer } from "node:http";

import { composeServices } from "@apollo/composition";
import { createGatewayRuntime } from "@graphql-hive/gateway";
import { parse } from "graphql";

const [port, ...named] = process.argv.slice(2);

async function sdlOf(url) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: "{ _service { sdl } }" }),
  });
  const body = await response.json();
  if (!body.data?._service?.sdl) throw new Error(`${url}: no _service { sdl }: ${JSON.stringify(body)}`);
  return body.data._service.sdl;
}

const services = await Promise.all(
  named.map(async (arg) => {
    const [name, url] = arg.split(/=(.*)/s);
    return { name, url, typeDefs: parse(await sdlOf(url)) };
  }),
);
const composed = composeServices(services);
if (composed.errors?.length) throw new Error(composed.errors.map((error) => error.message).join("\n"));

const gateway = createGatewayRuntime({
  supergraph: composed.supergraphSdl,
  logging: "error",
  // The viewer's bearer token reaches every subgraph, as with @apollo/gateway (gateway.mjs).
  propagateHeaders: {
    fromClientToSubgraphs: ({ request }) => ({ authorization: request.headers.get("authorization") }),
  },
});
const server = createServer(gateway);
server.listen(Number(port), "127.0.0.1", () => {
  console.log(`ready http://127.0.0.1:${port}${gateway.graphqlEndpoint}`);
});
