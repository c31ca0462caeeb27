"""The OpenAI Agents SDK (PyPI `openai-agents`, pinned in requirements.txt)
converts the bridge's two tools as an agent does, with and without strict
schemas, and calls them: strict_agents.py BINARY

No model is called and nothing leaves this machine (tracing is off): the
agent's own conversion, Agent.get_mcp_tools (MCPUtil.get_all_function_tools
with the agent's mcp_config), turns the tools of MCPServerStdio(BINARY
--demo) into FunctionTools, and each check invokes a FunctionTool's
on_invoke_tool with the JSON a model would send.

With mcp_config={"convert_schemas_to_strict": True} every property of
plugin_list_tools becomes required (agents/strict_schema.py), so a strict
model must send all of them: it sends null for those it means to leave out,
which the bridge's schemas allow. plugin_call_tool's free-form `arguments`
object cannot be made strict, so the SDK keeps its schema as published and
sends it non-strict.

Prints one line per check and a final tally line; exits 1 if any failed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from importlib.metadata import version

import anyio
import jsonschema
from agents import Agent, FunctionTool, RunContextWrapper, set_tracing_disabled
from agents.mcp import MCPServerStdio
from agents.tool_context import ToolContext

DEMO_TOOLS = ["example.delete_report", "example.list_reports", "example.run_report"]

results: list[tuple[str, bool]] = []


def check(name: str, ok: bool, detail: object = None) -> bool:
    results.append((name, bool(ok)))
    if ok:
        print(f"ok   agents: {name}", flush=True)
    else:
        print(f"FAIL agents: {name}: {detail!r}"[:2000], flush=True)
    return bool(ok)


async def invoke(tool: FunctionTool, arguments: dict) -> object:
    """Calls the FunctionTool as the agent runner does with a model's call,
    and returns its output parsed as JSON when it is one text."""
    raw = json.dumps(arguments)
    ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id="call_e2e", tool_arguments=raw)
    out = await tool.on_invoke_tool(ctx, raw)
    text = out.get("text") if isinstance(out, dict) else out
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return out


async def function_tools(server: MCPServerStdio, strict: bool) -> dict[str, FunctionTool]:
    agent = Agent(name="netbox", instructions="-", mcp_servers=[server], mcp_config={"convert_schemas_to_strict": strict})
    tools = await agent.get_mcp_tools(RunContextWrapper(context=None))
    return {t.name: t for t in tools if isinstance(t, FunctionTool)}


async def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    set_tracing_disabled(True)
    home = tempfile.mkdtemp(prefix="bridge-e2e-agents-")
    server = MCPServerStdio(
        params={"command": binary, "args": ["--demo"], "env": {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}},
        name="netbox-plugins",
        client_session_timeout_seconds=30,  # above the bridge's --timeout, as sdk-notes advise
    )
    try:
        async with server:
            raw_schemas = {t.name: t.input_schema for t in await server.list_tools()}  # mcp 2: input_schema

            # ---- strict ----
            tools = await function_tools(server, strict=True)
            check("strict: the agent gets both tools as FunctionTools", sorted(tools) == ["plugin_call_tool", "plugin_list_tools"], sorted(tools))
            lt = tools.get("plugin_list_tools")
            schema = lt.params_json_schema if lt else {}
            props = sorted((schema.get("properties") or {}).keys())
            check(
                "strict: plugin_list_tools became strict, every property required",
                lt is not None
                and lt.strict_json_schema is True
                and props == ["header", "plugin", "token"]
                and sorted(schema.get("required") or []) == props
                and schema.get("additionalProperties") is False,
                (lt and lt.strict_json_schema, schema),
            )
            check(
                "strict: each of its properties still admits null",
                all("null" in (p.get("type") or []) for p in (schema.get("properties") or {}).values()),
                schema.get("properties"),
            )
            nulls = {"plugin": None, "token": None, "header": None}
            strict_ok = jsonschema.Draft202012Validator(schema).is_valid(nulls)
            leave_out_ok = jsonschema.Draft202012Validator(schema).is_valid({})
            check(
                "strict: all-null arguments are what the strict schema accepts (leaving them out is not)",
                strict_ok and not leave_out_ok,
                (strict_ok, leave_out_ok),
            )
            if lt:
                doc = await invoke(lt, nulls)
                qualified = [t.get("qualified_name") for t in doc.get("tools", [])] if isinstance(doc, dict) else None
                check(
                    'strict: plugin_list_tools {"plugin": null, "token": null, "header": null} returns the full catalog',
                    isinstance(doc, dict) and doc.get("detail") == "full" and qualified == DEMO_TOOLS,
                    doc,
                )
                doc = await invoke(lt, {"plugin": "example", "token": None, "header": None})
                check(
                    "strict: with a plugin and the rest null, that plugin's tools with their input schemas",
                    isinstance(doc, dict)
                    and [t.get("qualified_name") for t in doc.get("tools", [])] == DEMO_TOOLS
                    and all("inputSchema" in t for t in doc.get("tools", [])),
                    doc,
                )
            ct = tools.get("plugin_call_tool")
            check(
                "strict: plugin_call_tool (a free-form arguments object) is kept non-strict with its schema as published",
                ct is not None and ct.strict_json_schema is False and ct.params_json_schema == raw_schemas["plugin_call_tool"],
                ct and (ct.strict_json_schema, ct.params_json_schema),
            )
            if ct:
                doc = await invoke(
                    ct,
                    {"plugin": "example", "tool": "list_reports", "arguments": {"status": "done"}, "dry_run": None, "token": None, "header": None},
                )
                check(
                    "strict: plugin_call_tool with every optional null but arguments reads (200)",
                    isinstance(doc, dict) and doc.get("status") == 200 and (doc.get("body") or {}).get("count") == 1,
                    doc,
                )
                # An isError result reaches the model as its text, which is the
                # bridge's message alone (README, Errors), not the JSON document.
                doc = await invoke(ct, {"plugin": "example", "tool": "run_report", "arguments": {"scope": "all"}, "dry_run": None, "token": None, "header": None})
                text = doc.get("text", "") if isinstance(doc, dict) else ""
                check(
                    "strict: a refused write reaches the model as the bridge's message, ending with what to do",
                    isinstance(doc, dict)
                    and doc.get("type") == "text"
                    and text.startswith("example.run_report is a write tool and mutations are disabled")
                    and text.endswith("Do not retry it unless the user asks you to, after allowing it."),
                    doc,
                )

            # ---- raw, as published ----
            tools = await function_tools(server, strict=False)
            lt = tools.get("plugin_list_tools")
            check(
                "raw: plugin_list_tools keeps the published schema, non-strict",
                lt is not None and lt.strict_json_schema is False and lt.params_json_schema == raw_schemas["plugin_list_tools"] and "required" not in lt.params_json_schema,
                lt and (lt.strict_json_schema, lt.params_json_schema),
            )
            if lt:
                doc = await invoke(lt, {})
                check(
                    "raw: plugin_list_tools {} returns the full catalog",
                    isinstance(doc, dict) and doc.get("detail") == "full" and [t.get("qualified_name") for t in doc.get("tools", [])] == DEMO_TOOLS,
                    doc,
                )
                doc = await invoke(lt, nulls)
                check(
                    "raw: plugin_list_tools with every argument null returns the same catalog",
                    isinstance(doc, dict) and doc.get("detail") == "full" and [t.get("qualified_name") for t in doc.get("tools", [])] == DEMO_TOOLS,
                    doc,
                )
            ct = tools.get("plugin_call_tool")
            if ct:
                doc = await invoke(ct, {"plugin": "example", "tool": "list_reports", "arguments": {"limit": 1}})
                check(
                    "raw: plugin_call_tool reads list_reports (200)",
                    isinstance(doc, dict) and doc.get("status") == 200 and len((doc.get("body") or {}).get("results", [])) == 1,
                    doc,
                )
            else:
                check("raw: plugin_call_tool is a FunctionTool", False, sorted(tools))
    except Exception as e:
        traceback.print_exc()
        check("the run ended normally", False, e)
    failed = [n for n, ok in results if not ok]
    passed = len(results) - len(failed)
    print(f"python openai-agents {version('openai-agents')} with mcp {version('mcp')} over stdio: {passed} passed, {len(failed)} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
