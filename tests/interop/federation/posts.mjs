// A second subgraph: posts, each by a FollowGraph user (an entity this subgraph only references).
// node posts.mjs PORT POSTS.json  (POSTS.json: [{"id", "title", "authorId"}]); prints "ready URL".
import { readFileSync } from "node:fs";
import { ApolloServer } from "@apollo/server";
import { startStandaloneServer } from "@apollo/server/standalone";
import { buildSubgraphSchema } from "@apollo/subgraph";
import { parse } from "graphql";

const [port, postsFile] = process.argv.slice(2);
const posts = JSON.parse(readFileSync(postsFile, "utf8"));

const typeDefs = parse(`
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

  type Query {
    "The first posts, as many as first says (all of them without it)."
    posts(first: Int): [Post!]!
  }

  type Post {
    id: ID!
    title: String!
    author: User!
  }

  type User @key(fields: "userId", resolvable: false) {
    userId: ID!
  }
`);

const resolvers = {
  Query: { posts: (_, { first }) => posts.slice(0, first ?? posts.length) },
  Post: { author: (post) => ({ __typename: "User", userId: post.authorId }) },
};

const server = new ApolloServer({ schema: buildSubgraphSchema({ typeDefs, resolvers }) });
const { url } = await startStandaloneServer(server, { listen: { host: "127.0.0.1", port: Number(port) } });
console.log(`ready ${url}`);
