#!/usr/bin/env python3
"""Talk MCP (stdio, JSON-RPC 2.0) to netbox-sdk's nbx-mcp started by e2e/netbox/setup.

    python3 e2e/netbox/reference_probe.py [--token VAR] [--url VAR] [TOOL ARGUMENTS-JSON]...

Reads $NETBOX_E2E_STATE/env (default /tmp/netbox-e2e/env), starts $NETBOX_E2E_REFERENCE with
NETBOX_URL set to the env file's URL VAR (default NETBOX_E2E_URL) and NETBOX_TOKEN to its
token VAR (default NETBOX_E2E_TOKEN_ALICE), initializes, lists
the tools, then calls each TOOL with its JSON arguments (default: plugin_list_tools for
bridge-test, then plugin_call_tool bridge-test.get_widget) and prints every answer.
Standard library only.
"""

import json
import os
import subprocess
import sys


def load_env():
    """The KEY=VALUE lines of $NETBOX_E2E_STATE/env (values are never quoted)."""
    path = os.path.join(os.environ.get("NETBOX_E2E_STATE", "/tmp/netbox-e2e"), "env")
    with open(path, encoding="utf-8") as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)


def main(argv):
    e2e = load_env()
    rest = argv[1:]
    token_var, url_var = "NETBOX_E2E_TOKEN_ALICE", "NETBOX_E2E_URL"
    while rest[:1] in (["--token"], ["--url"]):
        if rest[0] == "--token":
            token_var = rest[1]
        else:
            url_var = rest[1]
        rest = rest[2:]
    calls = [(rest[i], json.loads(rest[i + 1])) for i in range(0, len(rest) - 1, 2)] or [
        ("plugin_list_tools", {"plugin": "bridge-test"}),
        ("plugin_call_tool", {"plugin": "bridge-test", "tool": "get_widget", "arguments": {}}),
    ]
    env = dict(os.environ, NETBOX_URL=e2e[url_var], NETBOX_TOKEN=e2e[token_var])
    proc = subprocess.Popen([e2e["NETBOX_E2E_REFERENCE"]], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    next_id = 0

    def send(method, params=None, notify=False):
        nonlocal next_id
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            next_id += 1
            msg["id"] = next_id
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()
        if notify:
            return None
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("nbx-mcp closed its output")
            answer = json.loads(line)
            if answer.get("id") == next_id:
                return answer

    try:
        init = send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                   "clientInfo": {"name": "netbox-e2e-probe", "version": "1"}})
        print("initialize:", json.dumps(init["result"].get("serverInfo")))
        send("notifications/initialized", notify=True)
        tools = send("tools/list", {})
        print("tools:", [t["name"] for t in tools["result"]["tools"]])
        for name, arguments in calls:
            answer = send("tools/call", {"name": name, "arguments": arguments})
            print(f"{name} {json.dumps(arguments)}:")
            print(json.dumps(answer.get("result", answer.get("error")), indent=2))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
