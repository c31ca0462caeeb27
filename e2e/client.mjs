// One MCP session with the official TypeScript SDK client against the built
// binary: node client.mjs BINARY [ARGS...]. Prints one JSON report line and
// exits 1 if any check failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [binary, ...args] = process.argv.slice(2);
const mutations = args.includes("--allow-mutations");
const checks = [];
const check = (name, ok, detail) => checks.push({ name, ok: Boolean(ok), detail: ok ? undefined : detail });

const client = new Client({ name: "bridge-e2e", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: binary, args, stderr: "ignore" }));

const call = (name, args) => client.callTool({ name, arguments: args });
const code = (r) => r.structuredContent?.error?.code;

const listed = await client.listTools();
const names = listed.tools.map((t) => t.name).sort();
check("tools/list names", JSON.stringify(names) === '["plugin_call_tool","plugin_list_tools"]', names);
check("no outputSchema declared", listed.tools.every((t) => t.outputSchema === undefined), listed.tools);

const catalog = await call("plugin_list_tools", {});
const qualified = (catalog.structuredContent?.tools ?? []).map((t) => t.qualified_name);
check("catalog lists the demo tools", !catalog.isError && qualified.join() === "example.delete_report,example.list_reports,example.run_report", qualified);
check("catalog reports the broken plugin", catalog.structuredContent?.problems?.[0]?.plugin === "broken", catalog.structuredContent?.problems);
check("text content is the same document", JSON.stringify(JSON.parse(catalog.content[0].text)) === JSON.stringify(catalog.structuredContent));

const read = await call("plugin_call_tool", { plugin: "example", tool: "list_reports", arguments: { limit: 1, site: ["ams1"] } });
check("read succeeds", !read.isError && read.structuredContent?.status === 200, read.structuredContent);
check("read body validated", read.structuredContent?.body?.results?.[0]?.site === "ams1", read.structuredContent?.body);

const bad = await call("plugin_call_tool", { plugin: "example", tool: "list_reports", arguments: { limit: 1000 } });
check("invalid arguments refused", bad.isError && code(bad) === "invalid_arguments" && bad.structuredContent.error.dispatched === false, bad.structuredContent);

const preview = await call("plugin_call_tool", { plugin: "example", tool: "run_report", arguments: { scope: "all" }, dry_run: true });
check("write dry run", !preview.isError && preview.structuredContent?.dry_run === true && preview.structuredContent.allowed === mutations
  && preview.structuredContent.body?.scope === "all", preview.structuredContent);

const write = await call("plugin_call_tool", { plugin: "example", tool: "run_report", arguments: { scope: "all", site: "ams1" } });
if (mutations) {
  check("write dispatched", !write.isError && write.structuredContent?.status === 201 && write.structuredContent.body?.status === "queued", write.structuredContent);
  check("write Location header kept", typeof write.structuredContent?.headers?.Location === "string", write.structuredContent?.headers);
} else {
  check("write refused by the switch", write.isError && code(write) === "mutations_disabled" && write.structuredContent.error.dispatched === false, write.structuredContent);
}

// This client declares no elicitation: under --confirm auto the switch alone
// decides a destructive call (elicit.mjs is the client that can answer).
const del = await call("plugin_call_tool", { plugin: "example", tool: "delete_report", arguments: { id: 2 } });
if (mutations) {
  check("destructive dispatched without a question", !del.isError && del.structuredContent?.status === 204 && del.structuredContent.body === null, del.structuredContent);
} else {
  check("destructive refused by the switch", del.isError && code(del) === "mutations_disabled" && del.structuredContent.error.dispatched === false, del.structuredContent);
}

const missing = await call("plugin_call_tool", { plugin: "nope", tool: "x" });
check("unknown plugin", missing.isError && code(missing) === "plugin_not_found", missing.structuredContent);

await client.close();
const failed = checks.filter((c) => !c.ok);
console.log(JSON.stringify({ client: "@modelcontextprotocol/sdk", passed: checks.length - failed.length, failed }));
process.exit(failed.length ? 1 : 0);
