// babel-plugin-graphql-tag ships no types: a Babel plugin, as vite.config.ts passes it to Babel.
declare module "babel-plugin-graphql-tag" {
  import type { PluginItem } from "@babel/core";

  const plugin: PluginItem;
  export default plugin;
}
