"""A small NetBox plugin that advertises bridge v1 tools over one real model."""

from netbox.plugins import PluginConfig

__version__ = "0.1.0"


class BridgeTestConfig(PluginConfig):
    name = "netbox_bridge_test"
    verbose_name = "Bridge test"
    description = "Widgets and a bridge v1 manifest, for netbox-plugin-bridge's end-to-end tests"
    version = __version__
    author = "netbox-plugin-bridge"
    base_url = "bridge-test"
    min_version = "4.7.0"
    max_version = "4.99.99"
    required_settings = []
    # broken_tool: advertise broken_count, whose answer breaks its outputSchema
    # on purpose (instance B of the end-to-end NetBox turns it off).
    default_settings = {"broken_tool": True}


config = BridgeTestConfig
