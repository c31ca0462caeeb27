// The official TypeScript SDK client over streamable HTTP, for the tests of
// the real NetBox: node calls.mjs URL AUTHORIZATION CALLS, where CALLS is a
// JSON array of {"name", "arguments"}. It connects with that Authorization,
// makes each call in order, and prints one JSON document: the tools as
// tools/list gave them (annotations included) and each call's result (or
// the error that the client itself raised).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, authorization, calls] = process.argv.slice(2);
const client = new Client({ name: "bridge-e2e-netbox", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: authorization } } }));
const { tools } = await client.listTools();
const results = [];
for (const call of JSON.parse(calls)) {
  try {
    const r = await client.callTool(call);
    results.push({ isError: Boolean(r.isError), structuredContent: r.structuredContent ?? null });
  } catch (err) {
    results.push({ clientError: String(err) });
  }
}
console.log(JSON.stringify({ tools, results }));
await client.close();
