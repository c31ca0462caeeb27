from django.db import transaction
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.routers import APIRootView
from rest_framework.views import APIView

from netbox.api.authentication import IsAuthenticatedOrLoginNotRequired
from netbox.api.viewsets import NetBoxModelViewSet

from ..filtersets import WidgetFilterSet
from ..models import Widget
from .manifest import build_manifest
from .serializers import WidgetSerializer

MANIFEST_URL_NAME = "plugins-api:netbox_bridge_test-api:mcp-manifest"


class BridgeTestRootView(APIRootView):
    """The plugin's API root: the router's links plus the bridge v1 advertisement."""

    def get_view_name(self):
        return "Bridge test"

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        # reverse() without the request yields a root-relative path that includes BASE_PATH.
        response.data["mcp"] = {"schema_version": "1", "manifest": reverse(MANIFEST_URL_NAME)}
        return response


class ManifestView(APIView):
    """GET mcp/: the static manifest; each target view enforces its own permissions."""

    permission_classes = [IsAuthenticatedOrLoginNotRequired]

    def get_view_name(self):
        return "Bridge test MCP manifest"

    def get(self, request):
        return Response(build_manifest())


class WidgetViewSet(NetBoxModelViewSet):
    queryset = Widget.objects.prefetch_related("tags")
    serializer_class = WidgetSerializer
    filterset_class = WidgetFilterSet


def _date_time(value):
    return None if value is None else serializers.DateTimeField().to_representation(value)


def _positive_id(raw):
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise ValidationError({"id": ["must be an integer"]})
    if isinstance(raw, str):
        if not raw.isascii() or not raw.isdigit():
            raise ValidationError({"id": ["must be an integer"]})
        raw = int(raw)
    if raw < 1 or raw > 9_223_372_036_854_775_807:
        raise ValidationError({"id": ["out of range"]})
    return raw


class GetWidgetView(APIView):
    """GET tools/get-widget/?id=N|name=X: one widget the user may view."""

    # TokenPermissions (NetBox's default) requires the model's view permission.
    queryset = Widget.objects.all()

    def get_view_name(self):
        return "Get widget"

    # What drf-spectacular cannot see in a plain APIView, declared for NetBox's
    # OpenAPI schema, which the bridge's check --plugin compares the manifest with.
    @extend_schema(
        parameters=[
            OpenApiParameter("id", int, description="The widget's id."),
            OpenApiParameter("name", str, description="The widget's exact name."),
        ],
        responses=inline_serializer("BridgeTestWidgetDetail", {
            "id": serializers.IntegerField(),
            "name": serializers.CharField(),
            "serial": serializers.IntegerField(),
            "observed": serializers.DateTimeField(allow_null=True),
            "created": serializers.DateTimeField(allow_null=True),
            "last_updated": serializers.DateTimeField(allow_null=True),
        }),
    )
    def get(self, request):
        params = request.query_params
        unknown = sorted(set(params) - {"id", "name"})
        if unknown:
            raise ValidationError({key: ["unknown parameter"] for key in unknown})
        qs = Widget.objects.restrict(request.user, "view").order_by("pk")
        if "id" in params:
            qs = qs.filter(pk=_positive_id(params["id"]))
        if "name" in params:
            qs = qs.filter(name=params["name"])
        widget = qs.first()
        if widget is None:
            raise NotFound("No widget matches the given query.")
        return Response({
            "id": widget.pk,
            "name": widget.name,
            "serial": widget.serial,
            "observed": _date_time(widget.observed),
            "created": _date_time(widget.created),
            "last_updated": _date_time(widget.last_updated),
        })


class DeleteWidgetView(APIView):
    """DELETE tools/delete-widget/ with the JSON body {"id": N}: 204."""

    queryset = Widget.objects.all()

    def get_view_name(self):
        return "Delete widget"

    @extend_schema(
        request=inline_serializer("BridgeTestDeleteWidget", {"id": serializers.IntegerField(min_value=1)}),
        responses={204: None},
    )
    def delete(self, request):
        data = request.data
        if not isinstance(data, dict) or set(data) != {"id"}:
            raise ValidationError({"non_field_errors": ['the body must be the JSON object {"id": <integer>}']})
        if not isinstance(data["id"], int) or isinstance(data["id"], bool):
            raise ValidationError({"id": ["must be an integer"]})
        pk = _positive_id(data["id"])
        with transaction.atomic(using=Widget.objects.db):
            widget = Widget.objects.restrict(request.user, "delete").filter(pk=pk).first()
            if widget is None:
                raise NotFound("No widget matches the given query.")
            # Record the pre-change state for NetBox's change log, as NetBox's own views do.
            widget.snapshot()
            widget.delete()
        return Response(status=204)


class BrokenCountView(APIView):
    """GET tools/broken-count/: the count as a string, breaking the declared outputSchema."""

    queryset = Widget.objects.all()

    def get_view_name(self):
        return "Broken count"

    def get(self, request):
        count = Widget.objects.restrict(request.user, "view").count()
        return Response({"count": str(count)})
