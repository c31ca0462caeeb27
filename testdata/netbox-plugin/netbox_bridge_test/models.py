from django.db import models
from django.urls import reverse

from netbox.models import NetBoxModel


class Widget(NetBoxModel):
    """A change-logged NetBox object with a 64-bit integer and a timestamp."""

    name = models.CharField(max_length=100, unique=True)
    serial = models.BigIntegerField(default=0)
    observed = models.DateTimeField(blank=True, null=True)
    description = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ("name",)

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        # The plugin has no web UI; point at the object's REST representation.
        return reverse("plugins-api:netbox_bridge_test-api:widget-detail", args=[self.pk])
