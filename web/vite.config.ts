import { resolve } from "node:path";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Two pages, one build: the app (served at /) and GraphiQL (served at /graphql to browsers).
// Everything, workers and fonts included, is bundled under /assets: nothing is fetched from a CDN.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 6000,
    rollupOptions: {
      input: {
        app: resolve(import.meta.dirname, "index.html"),
        graphiql: resolve(import.meta.dirname, "graphiql.html"),
      },
      // GraphiQL's React-compiler runtime starts with "use no memo", which bundling drops harmlessly.
      onwarn(warning, warn) {
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
    },
  },
  worker: { format: "es" },
  server: {
    // `npm run dev` next to `followgraph serve --demo`: the API and the demo token come from it.
    proxy: { "/graphql": "http://127.0.0.1:8000", "/demo": "http://127.0.0.1:8000" },
  },
});
