"""The official Python MCP SDK (PyPI `mcp`, pinned in requirements.txt)
against the bridge, over one transport:

    mcp_client.py BINARY stdio [--protocol legacy]
    mcp_client.py BINARY http [--protocol legacy] [ADDR ADDR ADDR]

Over stdio it starts the bridge itself; over HTTP it starts three
`serve --http ADDR` processes (free loopback ports when no ADDR is given):
the demo, the demo with --allow-mutations=example.run_report, and a bridge
in front of a stalling NetBox (below). --protocol legacy makes the client
use the initialize handshake (2025-11-25) instead of the SDK's default,
server/discover (2026-07-28).

The checks: the catalog; a read; a refused write (mutations_disabled, not
dispatched); a dry run (allowed false without the switch; true with it,
and NetBox's reports unchanged); an allowed write (201, and NetBox has the
report); a write not on the list refused; progress during a full scan;
cancelling a call in flight; the session still usable after it.

The cancel cannot race: the demo NetBox answers in microseconds, so this
script runs a NetBox of its own (StallingNetBox) whose one endpoint holds
its request open until the bridge drops it. The client calls that tool,
waits until NetBox has the request (the call is then in flight inside the
bridge), and only then cancels the call (anyio cancel scope: the SDK sends
notifications/cancelled over stdio, and aborts the request's POST over
HTTP at 2026-07-28). The checks are that the call produced no result, and
that NetBox then saw the bridge close that request's connection before
anything was answered (the cancellation reached NetBox), within 10 s.
At 2025-11-25 over HTTP the SDK sends notifications/cancelled as a POST
of its own and keeps the call's POST open; a stateless server cannot tie
the two, so there the check is that NetBox's request ends when the client
closes (the README: a caller that goes away cancels its call's NetBox
request), and an info line says how long NetBox held it.

Prints one line per check and a final tally line; exits 1 if any failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from contextlib import AsyncExitStack, asynccontextmanager
from importlib.metadata import version

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

DEMO_TOKEN = "0123456789abcdef0123456789abcdef01234567"
DEMO_TOOLS = ["example.delete_report", "example.list_reports", "example.run_report"]

results: list[tuple[str, bool]] = []
label = ""


def check(name: str, ok: bool, detail: object = None) -> bool:
    results.append((name, bool(ok)))
    if ok:
        print(f"ok   {label}: {name}", flush=True)
    else:
        print(f"FAIL {label}: {name}: {detail!r}"[:2000], flush=True)
    return bool(ok)


def sc(result) -> dict:
    return result.structured_content or {}


def err_code(result) -> str | None:
    return (sc(result).get("error") or {}).get("code")


# ---- a NetBox that stalls one request until its client drops it ----

SLOW_MANIFEST = {
    "schema_version": "1",
    "plugin": "slow",
    "tools": [
        {
            "name": name,
            "title": title,
            "description": description,
            "method": "GET",
            "path": name + "/",
            "effect": "read",
            "inputSchema": {"type": "object", "additionalProperties": False},
            "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
        }
        for name, title, description in [
            ("wait", "Wait", "Answer after a long time."),
            ("ping", "Ping", "Answer at once."),
        ]
    ],
}


class StallingNetBox:
    """Plain HTTP/1.1 on a loopback port, one request per connection.

    GET /api/plugins/slow/wait/ sets `arrived`, then reads the connection:
    the bridge sends nothing more on it, so the read ends only when the
    bridge closes it (`aborted`, at `aborted_at`) or after 30 s (then
    it answers 200 and `answered` is set, which fails the check).
    """

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self.aborted = asyncio.Event()
        self.answered = asyncio.Event()
        self.aborted_at: float | None = None  # time.monotonic()
        self.requests: list[str] = []
        self.server: asyncio.base_events.Server | None = None
        self.base = ""

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        host, port = self.server.sockets[0].getsockname()[:2]
        self.base = f"http://{host}:{port}"

    def close(self) -> None:
        if self.server:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
            path = target.split("?", 1)[0]
            self.requests.append(f"{method} {path}")
            if headers.get("authorization") != "Token " + DEMO_TOKEN:
                return await self._send(writer, 403, {"detail": "Invalid v1 token"})
            if method != "GET":
                return await self._send(writer, 405, {"detail": "Method not allowed."})
            if path == "/api/plugins/":
                return await self._send(writer, 200, {"slow": self.base + "/api/plugins/slow/"})
            if path == "/api/plugins/slow/":
                return await self._send(writer, 200, {"mcp": {"schema_version": "1", "manifest": "/api/plugins/slow/mcp/"}})
            if path == "/api/plugins/slow/mcp/":
                return await self._send(writer, 200, SLOW_MANIFEST)
            if path == "/api/plugins/slow/ping/":
                return await self._send(writer, 200, {"pong": True})
            if path == "/api/plugins/slow/wait/":
                self.arrived.set()
                try:
                    extra = await asyncio.wait_for(reader.read(1), 30)
                except asyncio.TimeoutError:
                    extra = None
                if extra == b"":
                    self.aborted_at = time.monotonic()
                    self.aborted.set()
                    return
                self.answered.set()
                return await self._send(writer, 200, {"waited": True})
            return await self._send(writer, 404, {"detail": "Not found."})
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError, asyncio.CancelledError):
            pass  # a client that went away, or the server closing at the end
        finally:
            writer.close()

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, status: int, doc: object) -> None:
        body = json.dumps(doc).encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()


# ---- the bridge, over stdio or HTTP ----


class Bridges:
    """Opens MCP sessions with the bridge; over HTTP it runs the servers."""

    def __init__(self, binary: str, transport: str, protocol: str, addrs: list[str]):
        self.binary, self.transport, self.protocol, self.addrs = binary, transport, protocol, addrs
        self.home = tempfile.mkdtemp(prefix="bridge-e2e-python-")
        self.logs: list[tuple[str, object]] = []
        self.procs: list[subprocess.Popen] = []

    def log(self, name: str):
        f = tempfile.TemporaryFile("w+")
        self.logs.append((name, f))
        return f

    def env(self, extra: dict[str, str]) -> dict[str, str]:
        # Nothing of the caller's NetBox configuration reaches the bridge.
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home, **extra}

    def serve(self, args: list[str], extra_env: dict[str, str], name: str) -> str:
        """Starts serve --http on the next address and waits for /healthz."""
        addr = self.addrs.pop(0) if self.addrs else free_addr()
        proc = subprocess.Popen(
            [self.binary, "serve", "--http", addr, *args],
            env=self.env(extra_env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log(f"serve --http {addr} {name}"),
        )
        self.procs.append(proc)
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(f"http://{addr}/healthz", timeout=1) as r:
                    if r.status == 200:
                        return f"http://{addr}/mcp"
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve --http {addr} did not answer /healthz (exit {proc.poll()})")
            time.sleep(0.02)

    @asynccontextmanager
    async def session(self, args: list[str], netbox: str | None = None):
        """An MCP session with a bridge run with args, against the demo
        NetBox or, with netbox, against that NetBox."""
        mode = "legacy" if self.protocol == "legacy" else "auto"
        if netbox is None:
            args, extra, name = ["--demo", *args], {}, " ".join(["--demo", *args])
        else:
            extra, name = {"NETBOX_URL": netbox}, "NETBOX_URL=" + netbox
        async with AsyncExitStack() as stack:
            if self.transport == "stdio":
                if netbox is not None:
                    extra["NETBOX_TOKEN"] = DEMO_TOKEN
                params = StdioServerParameters(command=self.binary, args=args, env=self.env(extra))
                transport = stdio_client(params, errlog=self.log(f"stdio {name}"))
            else:
                url = self.serve(args, extra, name)  # the caller brings the NetBox token
                http = await stack.enter_async_context(create_mcp_http_client(headers={"Authorization": "Token " + DEMO_TOKEN}))
                transport = streamable_http_client(url, http_client=http)
            client = await stack.enter_async_context(Client(transport, mode=mode, read_timeout_seconds=30))
            global label
            label = f"{self.transport} {client.protocol_version}"
            yield client

    def close(self, failed: bool) -> None:
        for proc in self.procs:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if failed:
            for name, f in self.logs:
                f.seek(0)
                print(f"--- the bridge's stderr ({name}):\n{f.read()[-4000:]}", file=sys.stderr)


def free_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "127.0.0.1:%d" % s.getsockname()[1]


# ---- the checks ----


async def demo_refusing(bridges: Bridges) -> None:
    """The demo without --allow-mutations."""
    async with bridges.session([]) as c:
        listed = await c.list_tools()
        names = sorted(t.name for t in listed.tools)
        check("tools/list names the two tools", names == ["plugin_call_tool", "plugin_list_tools"], names)

        cat = await c.call_tool("plugin_list_tools", {})
        qualified = [t.get("qualified_name") for t in sc(cat).get("tools", [])]
        check(
            "catalog: plugin_list_tools lists the demo tools in full",
            not cat.is_error and sc(cat).get("detail") == "full" and qualified == DEMO_TOOLS,
            sc(cat),
        )
        problems = sc(cat).get("problems") or [{}]
        check("catalog reports the broken plugin", problems[0].get("plugin") == "broken", problems)
        check(
            "catalog text content is the structured document",
            len(cat.content) == 1 and json.loads(cat.content[0].text) == sc(cat),
            cat.content,
        )

        read = await c.call_tool(
            "plugin_call_tool", {"plugin": "example", "tool": "list_reports", "arguments": {"limit": 1, "site": ["ams1"]}}
        )
        body = sc(read).get("body") or {}
        check(
            "read: list_reports answers 200 with the site asked for",
            not read.is_error and sc(read).get("status") == 200 and [r.get("site") for r in body.get("results", [])] == ["ams1"],
            sc(read),
        )

        write = await c.call_tool("plugin_call_tool", {"plugin": "example", "tool": "run_report", "arguments": {"scope": "active"}})
        error = sc(write).get("error") or {}
        check(
            "refused write: run_report without --allow-mutations is mutations_disabled, not dispatched",
            write.is_error and error.get("code") == "mutations_disabled" and error.get("dispatched") is False,
            sc(write),
        )

        dry = await c.call_tool(
            "plugin_call_tool", {"plugin": "example", "tool": "run_report", "arguments": {"scope": "all"}, "dry_run": True}
        )
        d = sc(dry)
        check(
            "dry run: run_report shows the POST, its path and body, and that it would be refused",
            not dry.is_error
            and d.get("dry_run") is True
            and d.get("allowed") is False
            and d.get("method") == "POST"
            and d.get("path") == "/api/plugins/example/reports/run/"
            and (d.get("body") or {}).get("scope") == "all",
            d,
        )

        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        full = await c.call_tool("plugin_list_tools", {}, progress_callback=on_progress)
        # The SDK runs each progress callback as a task of its own: let the
        # last ones run before reading them.
        with anyio.move_on_after(2):
            while not progress or progress[-1][0] != progress[-1][1]:
                await anyio.sleep(0.01)
        values = [p[0] for p in progress]
        check(
            "progress: a full scan with a progress token reports strictly increasing values up to the total",
            not full.is_error
            and len(values) >= 1
            and all(a < b for a, b in zip(values, values[1:]))
            and all(p[1] is not None and p[0] <= p[1] for p in progress)
            and values[-1] == progress[-1][1],
            progress,
        )


async def demo_allowing(bridges: Bridges) -> None:
    """The demo with --allow-mutations=example.run_report."""
    async with bridges.session(["--allow-mutations=example.run_report"]) as c:

        async def reports() -> list[dict]:
            r = await c.call_tool("plugin_call_tool", {"plugin": "example", "tool": "list_reports", "arguments": {}})
            return (sc(r).get("body") or {}).get("results", [])

        before = await reports()
        dry = await c.call_tool(
            "plugin_call_tool",
            {"plugin": "example", "tool": "run_report", "arguments": {"scope": "all", "site": "ams1"}, "dry_run": True},
        )
        after_dry = await reports()
        check(
            "dry run with the write allowed: allowed true, and NetBox got nothing",
            not dry.is_error and sc(dry).get("dry_run") is True and sc(dry).get("allowed") is True and after_dry == before,
            (sc(dry), before, after_dry),
        )

        write = await c.call_tool(
            "plugin_call_tool", {"plugin": "example", "tool": "run_report", "arguments": {"scope": "all", "site": "ams1"}}
        )
        w = sc(write)
        after = await reports()
        check(
            "allowed write: run_report with --allow-mutations=example.run_report answers 201, and NetBox has the report",
            not write.is_error
            and w.get("status") == 201
            and (w.get("body") or {}).get("status") == "queued"
            and len(after) == len(before) + 1
            and after[0].get("id") == (w.get("body") or {}).get("id")
            and after[0].get("site") == "ams1",
            (w, after),
        )

        delete = await c.call_tool("plugin_call_tool", {"plugin": "example", "tool": "delete_report", "arguments": {"id": 1}})
        check(
            "a destructive tool not on the list is still mutations_disabled",
            delete.is_error and err_code(delete) == "mutations_disabled" and (sc(delete).get("error") or {}).get("dispatched") is False,
            sc(delete),
        )


async def cancel_in_flight(bridges: Bridges) -> None:
    """Cancel a call while the bridge waits on NetBox; the session goes on."""
    # At 2025-11-25 over streamable HTTP the SDK cancels with a
    # notifications/cancelled POST of its own and keeps the call's POST open;
    # a stateless server cannot tie that notification to the call, so there
    # the call's NetBox request ends when the client closes its connection
    # (README: a caller that goes away cancels its call's NetBox request).
    cancel_reaches = not (bridges.transport == "http" and bridges.protocol == "legacy")
    netbox = StallingNetBox()
    await netbox.start()
    try:
        async with bridges.session([], netbox=netbox.base) as c:
            got: list[object] = []

            async def call() -> None:
                got.append(await c.call_tool("plugin_call_tool", {"plugin": "slow", "tool": "wait"}))

            reached = True
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                try:
                    with anyio.fail_after(15):
                        await netbox.arrived.wait()
                except TimeoutError:
                    reached = False
                tg.cancel_scope.cancel()  # the call is in flight inside the bridge: cancel it
            cancelled_at = time.monotonic()
            check("cancel: the call was in flight (NetBox held its request) when the client cancelled it", reached, netbox.requests)
            check("cancel: the cancelled call produced no result", got == [], got)
            with anyio.move_on_after(10 if cancel_reaches else 2):
                await netbox.aborted.wait()
            if cancel_reaches:
                check(
                    "cancel: the bridge dropped its NetBox request before any answer",
                    netbox.aborted.is_set() and not netbox.answered.is_set(),
                    {"requests": netbox.requests, "answered": netbox.answered.is_set()},
                )
            elif not netbox.aborted.is_set():
                print(
                    f"info {label}: 2 s after the cancel NetBox still held the call's request: "
                    "the SDK's notifications/cancelled POST cannot reach a call on a stateless server"
                )

            ping = await c.call_tool("plugin_call_tool", {"plugin": "slow", "tool": "ping"})
            check(
                "after the cancel the session still works: the next call answers",
                not ping.is_error and sc(ping).get("status") == 200 and sc(ping).get("body") == {"pong": True},
                sc(ping),
            )
            listed = await c.call_tool("plugin_list_tools", {"plugin": "slow"})
            check(
                "after the cancel the catalog of that NetBox answers too",
                [t.get("qualified_name") for t in sc(listed).get("tools", [])] == ["slow.ping", "slow.wait"],
                sc(listed),
            )
        if not cancel_reaches:
            with anyio.move_on_after(10):
                await netbox.aborted.wait()
            check(
                "cancel: closing the client dropped the bridge's NetBox request before any answer",
                netbox.aborted.is_set() and not netbox.answered.is_set(),
                {"requests": netbox.requests, "answered": netbox.answered.is_set()},
            )
        if netbox.aborted_at is not None:
            print(f"info {label}: NetBox saw its request dropped {(netbox.aborted_at - cancelled_at) * 1000:.0f} ms after the cancel")
    finally:
        netbox.close()


async def main() -> int:
    args = sys.argv[1:]
    protocol = "auto"
    if "--protocol" in args:
        i = args.index("--protocol")
        protocol = args[i + 1]
        del args[i : i + 2]
    if len(args) < 2 or args[1] not in ("stdio", "http") or protocol not in ("auto", "legacy"):
        print(__doc__, file=sys.stderr)
        return 2
    binary, transport, addrs = os.path.abspath(args[0]), args[1], args[2:]
    global label
    label = transport
    bridges = Bridges(binary, transport, protocol, addrs)
    try:
        for part in (demo_refusing, demo_allowing, cancel_in_flight):
            try:
                await part(bridges)
            except Exception as e:  # a part that breaks is a failed check
                traceback.print_exc()
                check(f"{part.__name__} ran to its end", False, e)
    finally:
        failed = [n for n, ok in results if not ok]
        bridges.close(bool(failed))
    passed = len(results) - len(failed)
    negotiated = label.split(" ", 1)[1] if " " in label else "not negotiated"
    print(f"python mcp {version('mcp')} over {transport} (protocol {negotiated}): {passed} passed, {len(failed)} failed")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
