# Gunicorn configuration of one end-to-end NetBox web instance.
#
# Starts from NetBox's own gunicorn.py (copied to $NETBOX_ROOT/contrib/ by
# `netbox setup`), then binds the instance to 127.0.0.1:<port> and sizes it for a
# small test machine. Environment (set by e2e/netbox/setup):
#   NBX_E2E_PORT              port on 127.0.0.1
#   NBX_E2E_INSTANCE          "a" or "b" (names the pid file)
#   NBX_E2E_BASE_PATH         NetBox BASE_PATH ("" or "netbox/"), read by configuration.py
#   NBX_E2E_PROXBOX_BRIDGE    "active": switch Proxbox's bridge on in this instance only
import os

_netbox_root = os.environ.get("NETBOX_ROOT", "/opt/netbox")
with open(os.path.join(_netbox_root, "contrib", "gunicorn.py"), encoding="utf-8") as _f:
    exec(compile(_f.read(), "netbox-contrib-gunicorn.py", "exec"))

bind = f"127.0.0.1:{int(os.environ['NBX_E2E_PORT'])}"
workers = int(os.environ.get("NBX_E2E_WORKERS", "2"))
threads = int(os.environ.get("NBX_E2E_THREADS", "4"))
pidfile = f"/var/lib/nbx-e2e/run/gunicorn-{os.environ.get('NBX_E2E_INSTANCE', 'x')}.pid"
# Load NetBox once in the master and fork the workers: faster start, less memory.
preload_app = True
# One control socket per instance (gunicorn >= 26 makes one by default, in ~/.gunicorn/).
control_socket = f"/var/lib/nbx-e2e/run/gunicorn-{os.environ.get('NBX_E2E_INSTANCE', 'x')}.ctl"
accesslog = "-"
errorlog = "-"
loglevel = "info"
proc_name = f"netbox-e2e-{os.environ.get('NBX_E2E_INSTANCE', 'x')}"


def _activate_proxbox_bridge(log):
    """Flip Proxbox's bridge switch in memory, as Proxbox's own contract test does.

    netbox_proxbox.api.mcp_bridge.mcp_bridge_is_active() reads these module
    globals on every request (the API root and the manifest view call it per
    request), so setting them after import switches the bridge on in this
    process only; nothing on disk changes and instance B keeps it off.
    """
    import netbox_proxbox.api.mcp_bridge as bridge

    bridge.MCP_BRIDGE_ACTIVATION_STATE = "active"
    # mcp_bridge_is_active() also demands one complete SDK identity (a version
    # and a 40-hex commit). These identify no real build; they only satisfy
    # the activation gate, as in Proxbox's test.
    bridge.MCP_BRIDGE_EXPECTED_SDK_VERSION = os.environ.get("NBX_E2E_SDK_VERSION", "0.0.13")
    bridge.MCP_BRIDGE_EXPECTED_SDK_COMMIT = "a" * 40
    if not bridge.mcp_bridge_is_active():
        raise RuntimeError("could not activate Proxbox's MCP bridge")
    log.info("netbox-e2e: Proxbox MCP bridge activated in this process")


def _configure_instance(log):
    """Instance B leaves out the test plugin's broken tool, so that a live
    contract check passes there (the configuration file, shared by both
    instances and part of the snapshot's cache key, stays the same)."""
    if os.environ.get("NBX_E2E_INSTANCE") == "b":
        from django.conf import settings

        settings.PLUGINS_CONFIG.setdefault("netbox_bridge_test", {})["broken_tool"] = False
        log.info("netbox-e2e: the test plugin's broken tool is off in this instance")


def when_ready(server):
    # With preload_app the application (and netbox_proxbox) is already imported
    # in the master; workers forked afterwards inherit the flipped globals.
    if os.environ.get("NBX_E2E_PROXBOX_BRIDGE") == "active":
        _activate_proxbox_bridge(server.log)
    _configure_instance(server.log)


def post_worker_init(worker):
    # Also flip in each worker, so the switch holds even without preload_app.
    if os.environ.get("NBX_E2E_PROXBOX_BRIDGE") == "active":
        _activate_proxbox_bridge(worker.log)
    _configure_instance(worker.log)
