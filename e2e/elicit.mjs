// A human's confirmation through MCP elicitation (SPEC §13), with the
// official TypeScript SDK client declaring form elicitation:
// node elicit.mjs BINARY --demo --allow-mutations [--log-format json].
// The demo's destructive tool example.delete_report is called three times;
// the "human" accepts once, declines once and dismisses once. Prints one
// JSON report line and exits 1 if any check failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [binary, ...args] = process.argv.slice(2);
const checks = [];
const check = (name, ok, detail) => checks.push({ name, ok: Boolean(ok), detail: ok ? undefined : detail });

// The answers the "human" gives, in order; every question asked is kept.
const answers = [];
const questions = [];
const client = new Client({ name: "bridge-e2e-elicit", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  questions.push(request.params);
  return answers.shift() ?? { action: "cancel" };
});

const transport = new StdioClientTransport({ command: binary, args, stderr: "pipe" });
let stderr = "";
transport.stderr.on("data", (chunk) => (stderr += chunk));
await client.connect(transport);

const call = (name, args) => client.callTool({ name, arguments: args });
const code = (r) => r.structuredContent?.error?.code;
const del = (id) => call("plugin_call_tool", { plugin: "example", tool: "delete_report", arguments: { id } });
const ids = async () => {
  const r = await call("plugin_call_tool", { plugin: "example", tool: "list_reports", arguments: {} });
  return (r.structuredContent?.body?.results ?? []).map((x) => x.id).sort();
};

check("demo starts with reports 1 and 2", JSON.stringify(await ids()) === "[1,2]", await ids());
check("a read asks no question", questions.length === 0, questions);

const preview = await call("plugin_call_tool", { plugin: "example", tool: "delete_report", arguments: { id: 1 }, dry_run: true });
check("destructive dry run, no question", !preview.isError && preview.structuredContent?.dry_run === true
  && preview.structuredContent.method === "DELETE" && questions.length === 0, { preview: preview.structuredContent, questions });

// Accepted: the request goes to NetBox once.
answers.push({ action: "accept", content: { confirm: true } });
const accepted = await del(1);
check("accept: one question", questions.length === 1, questions);
const q = questions[0] ?? {};
check("question is form mode with the one-boolean schema", (q.mode ?? "form") === "form"
  && JSON.stringify(q.requestedSchema?.required) === '["confirm"]'
  && q.requestedSchema?.properties?.confirm?.type === "boolean"
  && Object.keys(q.requestedSchema?.properties ?? {}).join() === "confirm", q);
check("question names the tool, effect, method, path and body", typeof q.message === "string"
  && q.message.includes("example.delete_report") && q.message.includes("destructive")
  && q.message.includes("DELETE /api/plugins/example/reports/") && /"id":\s*1/.test(q.message), q.message);
check("accept: dispatched, 204, no body", !accepted.isError && accepted.structuredContent?.status === 204
  && accepted.structuredContent.body === null && accepted.structuredContent.effect === "destructive", accepted.structuredContent);

// Declined: nothing is sent.
answers.push({ action: "decline" });
const declined = await del(2);
check("decline: one more question, about id 2", questions.length === 2 && /"id":\s*2/.test(questions[1]?.message ?? ""), questions);
const e = declined.structuredContent?.error ?? {};
check("decline: not_confirmed, not dispatched", declined.isError && code(declined) === "not_confirmed" && e.dispatched === false
  && /declined/.test(e.message) && /nothing reached NetBox/.test(e.message), declined.structuredContent);

// Dismissed: nothing is sent either.
answers.push({ action: "cancel" });
const cancelled = await del(2);
check("cancel: not_confirmed, not dispatched", cancelled.isError && code(cancelled) === "not_confirmed"
  && cancelled.structuredContent.error.dispatched === false && questions.length === 3, cancelled.structuredContent);

// What NetBox holds proves what reached it: 1 deleted, 2 kept.
check("NetBox: report 1 deleted, report 2 kept", JSON.stringify(await ids()) === "[2]", await ids());
check("reads asked no question", questions.length === 3, questions.length);

await client.close();
await new Promise((resolve) => setTimeout(resolve, 100)); // the last stderr lines

// With --log-format json, the audit: one record per decision, no secret.
if (args.includes("--log-format")) {
  const writes = stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).filter((r) => r.msg === "write");
  const decisions = writes.map((r) => r.decision + (r.status ? ":" + r.status : "")).join();
  // A dispatched write has two records: dispatching before the send, dispatched with the outcome.
  check("audit: dry_run, dispatching, dispatched:204, not_confirmed ×2", decisions === "dry_run,dispatching,dispatched:204,not_confirmed,not_confirmed", writes);
  check("audit: records name the tool and the method", writes.every((r) => r.plugin === "example" && r.tool === "delete_report" && r.method === "DELETE"), writes);
  // The demo's token is public and its start-up line names it on purpose; the audit never does.
  check("audit: the token as v1: and 12 hex digits, never the secret", writes.every((r) => /^v1:[0-9a-f]{12}$/.test(r.token) && r.token_source === "configured"
    && !JSON.stringify(r).includes("0123456789abcdef0123456789abcdef01234567")), writes);
}

const failed = checks.filter((c) => !c.ok);
console.log(JSON.stringify({ client: "@modelcontextprotocol/sdk", elicitation: "form", questions: questions.length, passed: checks.length - failed.length, failed }));
process.exit(failed.length ? 1 : 0);
