import { defineConfig } from "vitest/config";

// Unit tests of the app (no server). The client suites against a real server are in
// tests/clients and run from pytest, which starts the server.
export default defineConfig({
  test: { include: ["src/**/*.test.ts"], environment: "node" },
});
