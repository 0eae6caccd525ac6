import { defineConfig } from "vitest/config";

// Client libraries against a real server: run by tests/web/test_clients.py, which starts
// `followgraph serve` in demo mode and passes its address as FOLLOWGRAPH_URL.
export default defineConfig({
  test: {
    include: ["tests/clients/**/*.test.ts"],
    environment: "node",
    testTimeout: 30_000,
    fileParallelism: false,
  },
});
