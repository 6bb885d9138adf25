/**
 * @module Which source files and functions one proxied model call runs: a non-streamed and a streamed chat call go
 * through the proxy test harness (the fake vLLM runs in a child process), after a warm-up call of each, while V8's
 * precise coverage counts every function invocation. Prints, per call, the files under `src/` it ran code in, the
 * distinct functions and the invocations.
 *
 * Run: `npx tsx scripts/call-trail.ts`
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { Session } from "node:inspector/promises";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface FunctionCoverage {
  functionName: string;
  ranges: { count: number }[];
}

async function upstream(): Promise<void> {
  const { FakeVllm } = await import("../src/gateway/testing/fake-vllm.js");
  const fake = await FakeVllm.start();
  process.send!(fake.url);
}

async function main(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ["upstream"], { execArgv: ["--import", "tsx"] });
  const [url] = (await once(child, "message")) as [string];
  const { startProxyHarness } = await import("../src/gateway/testing/proxy-harness.js");
  const h = await startProxyHarness({ models: [{ model: "policy", endpoint: url, version: 0 }] });
  const rid = await h.newRollout();
  const call = async (stream: boolean): Promise<void> => {
    const res = await fetch(`${h.openaiBase(rid)}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${h.key}` },
      body: JSON.stringify({ model: "agent", messages: [{ role: "user", content: "hi" }], max_tokens: 4, stream }),
    });
    if (res.status !== 200) throw new Error(`call answered ${res.status}: ${await res.text()}`);
    await res.text();
  };
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  for (const stream of [false, true]) {
    await call(stream);
    await session.post("Profiler.takePreciseCoverage");
    await call(stream);
    const { result } = await session.post("Profiler.takePreciseCoverage");
    const files = new Map<string, { functions: number; calls: number }>();
    for (const script of result) {
      if (!script.url.startsWith("file://")) continue;
      const path = relative(ROOT, fileURLToPath(script.url));
      if (!path.startsWith("src/") || path.includes("/testing/")) continue;
      for (const fn of script.functions as FunctionCoverage[]) {
        const count = fn.ranges[0]?.count ?? 0;
        if (count === 0) continue;
        const entry = files.get(path) ?? { functions: 0, calls: 0 };
        entry.functions++;
        entry.calls += count;
        files.set(path, entry);
      }
    }
    const sorted = [...files].sort(([a], [b]) => a.localeCompare(b));
    let functions = 0;
    let calls = 0;
    console.log(`\n${stream ? "streamed" : "non-streamed"} chat call: ${sorted.length} files`);
    for (const [path, entry] of sorted) {
      console.log(`  ${path.padEnd(48)} ${String(entry.functions).padStart(3)} functions ${entry.calls} calls`);
      functions += entry.functions;
      calls += entry.calls;
    }
    const proxy = sorted.filter(([p]) => p.startsWith("src/gateway/proxy/") || p === "src/gateway/routes/proxy.ts");
    const proxyFunctions = proxy.reduce((sum, [, e]) => sum + e.functions, 0);
    const proxyCalls = proxy.reduce((sum, [, e]) => sum + e.calls, 0);
    console.log(`  all of src/: ${functions} functions, ${calls} calls`);
    console.log(
      `  proxy route + src/gateway/proxy/: ${proxy.length} files, ${proxyFunctions} functions, ${proxyCalls} calls`,
    );
  }
  await h.close();
  child.kill();
}

if (process.argv[2] === "upstream") await upstream();
else await main();
