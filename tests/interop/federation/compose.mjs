// Composes subgraph schemas with @apollo/composition, as a gateway or router would.
// node compose.mjs NAME=FILE.graphql [NAME=FILE.graphql...]: prints {"errors": [...]} and, when it
// composes, {"supergraphSdl": ...} as JSON.
import { readFileSync } from "node:fs";
import { composeServices } from "@apollo/composition";
import { parse } from "graphql";

const services = process.argv.slice(2).map((arg) => {
  const [name, file] = arg.split(/=(.*)/s);
  return { name, url: `http://${name}.invalid/graphql`, typeDefs: parse(readFileSync(file, "utf8")) };
});
const result = composeServices(services);
const errors = (result.errors ?? []).map((error) => error.message);
console.log(JSON.stringify({ errors, supergraphSdl: result.supergraphSdl ?? null }));
