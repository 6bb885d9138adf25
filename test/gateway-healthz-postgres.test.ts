/**
 * `/healthz` follows the store: a gateway whose PostgreSQL is down answers 503 `store_unavailable` with `Retry-After`
 * (before: 200 while every write failed), and 200 again once the database is back; `/livez` answers 200 throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway } from "../src/gateway/testing/serve.js";
import { PostgresStore } from "../src/store/postgres.js";
import { PostgresServer, skipWithoutPostgres } from "../src/testing/postgres-server.js";

describe.skipIf(skipWithoutPostgres())("/healthz on PostgreSQL", () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server?.stop());

  it("answers 503 with Retry-After while PostgreSQL is down (/livez stays 200), and 200 once it is back", async () => {
    const store = await PostgresStore.open(await server.createDatabase(), { connectTimeoutMs: 2000 });
    const gw = await startTestGateway({}, store);
    try {
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
      server.halt();
      const down = await fetch(`${gw.url}/healthz`);
      expect(down.status).toBe(503);
      expect(down.headers.get("retry-after")).not.toBeNull();
      expect(await down.json()).toMatchObject({ code: "store_unavailable" });
      // Liveness does not follow the database: restarting the gateway would not bring it back.
      expect((await fetch(`${gw.url}/livez`)).status).toBe(200);
      server.resume();
      const deadline = Date.now() + 20_000;
      let status = 0;
      while (Date.now() < deadline && status !== 200) {
        status = (await fetch(`${gw.url}/healthz`)).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe(200);
    } finally {
      await gw.close();
    }
  }, 60_000);
});
