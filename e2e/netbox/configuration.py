# NetBox configuration for the end-to-end NetBox of netbox-plugin-bridge.
#
# Installed by e2e/netbox/setup as $NETBOX_ROOT/conf/configuration.py inside the
# Debian root. Everything variable (secrets, plugins, paths) comes from e2e.json,
# which setup writes beside this file; NBX_E2E_BASE_PATH selects the instance
# (empty for instance A, "netbox/" for instance B). Not for production use.
import json
import os

from netbox_branching.utilities import DynamicSchemaDict

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e.json"), encoding="utf-8") as _f:
    _E2E = json.load(_f)

ALLOWED_HOSTS = _E2E["allowed_hosts"]

# PostgreSQL over its unix socket only (the cluster listens on no TCP address).
# NetBox Branching requires the DynamicSchemaDict wrapper and its router.
DATABASES = DynamicSchemaDict({
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("NBX_E2E_DB_NAME", "netbox"),
        "USER": "netbox",
        "PASSWORD": "",
        "HOST": _E2E["socket_dir"],
        "PORT": "",
        "CONN_MAX_AGE": 300,
    }
})
DATABASE_ROUTERS = ["netbox_branching.database.BranchAwareRouter"]

# Redis over its unix socket only.
REDIS = {
    "tasks": {"URL": f"unix://{_E2E['redis_socket']}?db=0"},
    "caching": {"URL": f"unix://{_E2E['redis_socket']}?db=1"},
}

SECRET_KEY = _E2E["secret_key"]
# v2 tokens (nbt_<key>.<secret>) are hashed with a pepper; v1 tokens need nothing.
API_TOKEN_PEPPERS = {int(k): v for k, v in _E2E["api_token_peppers"].items()}

BASE_PATH = os.environ.get("NBX_E2E_BASE_PATH", "")
# LOGIN_REQUIRED is True by default in NetBox 4.7 (and deprecated as a setting): anonymous API
# requests get 403. setup checks that.
TIME_ZONE = "UTC"
DEVELOPER = bool(os.environ.get("NBX_E2E_DEVELOPER"))
CENSUS_REPORTING_ENABLED = False
RELEASE_CHECK_URL = None

PLUGINS = _E2E["plugins"]
PLUGINS_CONFIG = _E2E["plugins_config"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
