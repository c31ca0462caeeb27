from django.urls import path

from netbox.api.routers import NetBoxRouter

from . import views

router = NetBoxRouter()
router.APIRootView = views.BridgeTestRootView
router.register("widgets", views.WidgetViewSet)

urlpatterns = router.urls + [
    path("mcp/", views.ManifestView.as_view(), name="mcp-manifest"),
    path("tools/get-widget/", views.GetWidgetView.as_view(), name="tool-get-widget"),
    path("tools/delete-widget/", views.DeleteWidgetView.as_view(), name="tool-delete-widget"),
    path("tools/broken-count/", views.BrokenCountView.as_view(), name="tool-broken-count"),
]
