import { readFile, writeFile } from "node:fs/promises";
import { extname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { brotliCompress, constants, gzip } from "node:zlib";
import { transformAsync } from "@babel/core";
import react from "@vitejs/plugin-react";
import graphqlTag from "babel-plugin-graphql-tag";
import { defineConfig, type Plugin } from "vite";

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

// The kinds of file worth compressing (fonts in TrueType are, unlike WOFF2); images are not.
const COMPRESSIBLE = new Set([".js", ".mjs", ".css", ".html", ".svg", ".json", ".map", ".ttf", ".txt"]);

/**
 * Every compressible file a build writes also as `.br` and `.gz` beside it, for the server to send to
 * browsers that accept them (transport/web.py): compressed once here, never per request. A variant
 * that saves under a tenth of the file is not written.
 */
function precompress(brotliQuality: number): Plugin {
  return {
    name: "followgraph-precompress",
    apply: "build",
    async writeBundle(options, bundle) {
      const outDir = options.dir ?? "dist";
      const files = Object.keys(bundle).filter((name) => COMPRESSIBLE.has(extname(name)));
      await Promise.all(
        files.map(async (name) => {
          const path = join(outDir, name);
          const content = await readFile(path);
          const variants: [string, Buffer][] = [
            [
              ".br",
              await brotli(content, {
                params: {
                  [constants.BROTLI_PARAM_QUALITY]: brotliQuality,
                  [constants.BROTLI_PARAM_SIZE_HINT]: content.length,
                },
              }),
            ],
            [".gz", await gzipped(content, { level: constants.Z_BEST_COMPRESSION })],
          ];
          for (const [suffix, compressed] of variants) {
            if (compressed.length < content.length * 0.9) await writeFile(path + suffix, compressed);
          }
        }),
      );
    },
  };
}

/**
 * The app's GraphQL documents (gql`...`) parsed at build time, by Babel's graphql-tag plugin, into
 * the syntax trees the tag would make: a phone parses none at start (some 30 documents, a third of
 * the script's start-up work on Lighthouse's phone). A fragment interpolated into a document is
 * joined to it at run time, without a parse.
 */
function precompileDocuments(): Plugin {
  return {
    name: "followgraph-precompile-documents",
    apply: "build",
    async transform(code, id) {
      if (!/\/src\/app\/.*\.tsx?$/.test(id) || !code.includes("gql`")) return null;
      const result = await transformAsync(code, {
        filename: id,
        babelrc: false,
        configFile: false,
        sourceMaps: true,
        parserOpts: { plugins: ["typescript", "jsx"] },
        plugins: [[graphqlTag, { strip: true }]],
      });
      return result?.code ? { code: result.code, map: result.map } : null;
    },
  };
}

const PAGES = { app: "index.html", graphiql: "graphiql.html" } as const;

// Two pages, two builds into one dist/: the app (served at /) by `vite build`, then GraphiQL
// (served at /graphql to browsers) by `vite build --mode graphiql`. Built together they would share
// chunks, and the app would load with them the parts of graphql-js only GraphiQL uses (about 125 KB).
// Everything, workers and fonts included, is bundled under /assets: nothing is fetched from a CDN.
export default defineConfig(({ mode }) => {
  const page = mode === "graphiql" ? "graphiql" : "app";
  return {
    // The app, which phones load, at brotli's last level; GraphiQL (4 MB of editor) at the level
    // below, a quarter of the time for 2% more.
    plugins: [react(), ...(page === "app" ? [precompileDocuments()] : []), precompress(page === "app" ? 11 : 10)],
    build: {
      outDir: "dist",
      // The app's build empties dist/; GraphiQL's is written beside it.
      emptyOutDir: page === "app",
      chunkSizeWarningLimit: 6000,
      rollupOptions: {
        input: { [page]: resolve(import.meta.dirname, PAGES[page]) },
        // Compressing takes most of the build's time, knowingly: no warning about slow plugins.
        checks: { bundlerTimings: false },
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
  };
});
