import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "src/**/*.test.ts",
      "test/**/*.test.ts",
      "examples/**/*.test.ts",
      "recipes/**/*.test.ts",
      "ui/**/*.test.ts",
    ],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
