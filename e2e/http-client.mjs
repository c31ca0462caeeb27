// The official TypeScript SDK client over streamable HTTP (SPEC §14), with the
// caller's own NetBox token: node http-client.mjs URL [--rounds N] [--pause-after K].
// URL is the MCP endpoint (a load balancer in front of `serve --http --demo`
// replicas). Each round runs the catalog, a read, a write the switch refuses
// and a dry run. With --pause-after K it prints {"paused": K} after round K and
// waits for a line on stdin before it goes on, so the caller can change the
// deployment mid-run (kill a replica). Prints one JSON report line last and
// exits 1 if any check failed.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const argv = process.argv.slice(2);
const url = new URL(argv[0]);
const option = (name, fallback) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback);
const rounds = option("--rounds", 1);
const pauseAfter = option("--pause-after", 0);

// The demo NetBox's public v1 token: in caller mode each caller brings one.
const authorization = "Token 0123456789abcdef0123456789abcdef01234567";

const checks = [];
const check = (name, ok, detail) => checks.push({ name, ok: Boolean(ok), detail: ok ? undefined : detail });

// Every HTTP request the transport makes, counted by method and status.
const requests = {};
const counting = async (input, init) => {
  const response = await fetch(input, init);
  const key = `${init?.method ?? "GET"} ${response.status}`;
  requests[key] = (requests[key] ?? 0) + 1;
  return response;
};

// No token: 401 with a Bearer challenge, before any MCP processing.
const refused = await fetch(url, {
  method: "POST",
  headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
});
check("no token: 401 with WWW-Authenticate: Bearer", refused.status === 401 && /^Bearer/.test(refused.headers.get("www-authenticate") ?? ""),
  { status: refused.status, challenge: refused.headers.get("www-authenticate") });

const client = new Client({ name: "bridge-e2e-http", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: authorization } }, fetch: counting });
await client.connect(transport);
check("stateless: no Mcp-Session-Id", transport.sessionId === undefined, transport.sessionId);

let calls = 0;
const call = async (label, name, args) => {
  calls++;
  try {
    return await client.callTool({ name, arguments: args });
  } catch (err) {
    check(`${label}: answered`, false, String(err));
    return { isError: true, structuredContent: {} };
  }
};
const code = (r) => r.structuredContent?.error?.code;

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
for (let round = 1; round <= rounds; round++) {
  const r = `round ${round}`;
  const catalog = await call(`${r} catalog`, "plugin_list_tools", {});
  const qualified = (catalog.structuredContent?.tools ?? []).map((t) => t.qualified_name).join();
  check(`${r} catalog`, !catalog.isError && qualified === "example.delete_report,example.list_reports,example.run_report"
    && catalog.structuredContent.problems?.[0]?.plugin === "broken", catalog.structuredContent);

  const read = await call(`${r} read`, "plugin_call_tool", { plugin: "example", tool: "list_reports", arguments: { limit: 1 } });
  check(`${r} read`, !read.isError && read.structuredContent?.status === 200 && read.structuredContent.body?.count === 1, read.structuredContent);

  const write = await call(`${r} write`, "plugin_call_tool", { plugin: "example", tool: "run_report", arguments: { scope: "all" } });
  check(`${r} write refused by the switch`, write.isError && code(write) === "mutations_disabled"
    && write.structuredContent.error.dispatched === false, write.structuredContent);

  const dry = await call(`${r} dry run`, "plugin_call_tool", { plugin: "example", tool: "run_report", arguments: { scope: "active" }, dry_run: true });
  check(`${r} dry run`, !dry.isError && dry.structuredContent?.dry_run === true && dry.structuredContent.allowed === false
    && dry.structuredContent.method === "POST" && dry.structuredContent.body?.scope === "active", dry.structuredContent);

  if (round === pauseAfter) {
    console.log(JSON.stringify({ paused: round }));
    await lines.next();
  }
}

await client.close();
const failed = checks.filter((c) => !c.ok);
console.log(JSON.stringify({ client: "@modelcontextprotocol/sdk", transport: "streamable-http", rounds, calls, requests, passed: checks.length - failed.length, failed }));
process.exit(failed.length ? 1 : 0);
