from netbox.api.serializers import NetBoxModelSerializer

from ..models import Widget


class WidgetSerializer(NetBoxModelSerializer):
    class Meta:
        model = Widget
        fields = (
            "id", "url", "display", "name", "serial", "observed", "description",
            "tags", "custom_fields", "created", "last_updated",
        )
        brief_fields = ("id", "url", "display", "name")
