"""The bridge v1 manifest of this plugin (schema_version "1")."""

SLUG = "bridge-test"

INT64_MIN = -9_223_372_036_854_775_808
INT64_MAX = 9_223_372_036_854_775_807
ID = {"type": "integer", "minimum": 1, "maximum": INT64_MAX}
SERIAL = {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX}
DATE_TIME = {"type": "string", "format": "date-time"}
OPTIONAL_DATE_TIME = {"type": ["string", "null"], "format": "date-time"}
NAME = {"type": "string", "minLength": 1, "maxLength": 100}

READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

WIDGET_SUMMARY = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string"},
        "serial": SERIAL,
        "observed": OPTIONAL_DATE_TIME,
        "description": {"type": "string"},
        "created": OPTIONAL_DATE_TIME,
        "last_updated": OPTIONAL_DATE_TIME,
    },
    "required": ["id", "name", "serial", "observed"],
}

TOOLS = [
    {
        "name": "list_widgets",
        "title": "List widgets",
        "description": (
            "List the widgets the NetBox user behind the token may view, optionally filtered by exact name "
            "or by ids. "
            "Answers with NetBox's paginated list: count, next, previous, results."
        ),
        "method": "GET",
        "path": "widgets/",
        "effect": "read",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": dict(NAME, description="Exact widget name."),
                "id": {"type": "array", "items": ID, "minItems": 1, "maxItems": 50,
                       "description": "Widget ids (any of); sent as repeated query parameters."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                "offset": {"type": "integer", "minimum": 0},
            },
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 0},
                "next": {"type": ["string", "null"]},
                "previous": {"type": ["string", "null"]},
                "results": {"type": "array", "items": WIDGET_SUMMARY},
            },
            "required": ["count", "next", "previous", "results"],
        },
        "annotations": READ,
    },
    {
        "name": "get_widget",
        "title": "Get one widget",
        "description": (
            "Return one widget the user may view: the one with the given id or name, else the one with the "
            "lowest id. serial is a 64-bit integer sent as an exact JSON integer; times are RFC 3339."
        ),
        "method": "GET",
        "path": "tools/get-widget/",
        "effect": "read",
        "inputSchema": {
            "type": "object",
            "properties": {"id": ID, "name": NAME},
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "id": ID,
                "name": {"type": "string"},
                "serial": SERIAL,
                "observed": OPTIONAL_DATE_TIME,
                "created": OPTIONAL_DATE_TIME,
                "last_updated": OPTIONAL_DATE_TIME,
            },
            "required": ["id", "name", "serial", "observed", "created", "last_updated"],
            "additionalProperties": False,
        },
        "annotations": READ,
    },
    {
        "name": "create_widget",
        "title": "Create a widget",
        "description": (
            "Create a widget through NetBox's own REST endpoint (add permission required; the change is logged "
            "under the token's user). Answers 201 with the new object."
        ),
        "method": "POST",
        "path": "widgets/",
        "effect": "write",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": NAME,
                "serial": SERIAL,
                "observed": DATE_TIME,
                "description": {"type": "string", "maxLength": 200},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "outputSchema": WIDGET_SUMMARY,
        "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False,
                        "openWorldHint": False},
    },
    {
        "name": "delete_widget",
        "title": "Delete a widget",
        "description": "Delete the widget with the given id (delete permission required). Answers 204.",
        "method": "DELETE",
        "path": "tools/delete-widget/",
        "effect": "destructive",
        "inputSchema": {
            "type": "object",
            "properties": {"id": ID},
            "required": ["id"],
            "additionalProperties": False,
        },
        "outputSchema": None,
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True,
                        "openWorldHint": False},
    },
    {
        "name": "broken_count",
        "title": "Count widgets (broken on purpose)",
        "description": (
            "Count the widgets the user may view. Deliberately answers the count as a string although its "
            "outputSchema declares an integer, so that a contract check has something to find."
        ),
        "method": "GET",
        "path": "tools/broken-count/",
        "effect": "read",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "outputSchema": {
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 0}},
            "required": ["count"],
            "additionalProperties": False,
        },
        "annotations": READ,
    },
]


def build_manifest():
    """The manifest; PLUGINS_CONFIG's broken_tool (default True) keeps broken_count in it."""
    from netbox.plugins import get_plugin_config

    tools = TOOLS
    if not get_plugin_config("netbox_bridge_test", "broken_tool"):
        tools = [t for t in TOOLS if t["name"] != "broken_count"]
    return {"schema_version": "1", "plugin": SLUG, "tools": tools}
