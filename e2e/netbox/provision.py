"""Create the end-to-end identities and seed data through NetBox's own models.

Run once per database snapshot by e2e/netbox/setup, inside the Debian root, with
NetBox's virtual environment:

    NETBOX_ROOT=/opt/netbox DJANGO_SETTINGS_MODULE=netbox.settings python provision.py OUT.json

Users (all with a v2 token; alice also with a v1 token):
    admin   superuser
    alice   view/add/change/delete on netbox_bridge_test.widget, view on netbox_branching.branch
    bob     the same as alice (a second writer)
    reader  view on netbox_bridge_test.widget
    nobody  no permission at all
Seed: three widgets; "alpha" has serial 9007199254740993 (2^53 + 1).
Writes OUT.json: {"tokens": {...}, "admin_password": ..., "users": [...]}.
"""

import datetime
import json
import secrets
import sys

import django

django.setup()

from django.db import transaction  # noqa: E402

from core.models import ObjectType  # noqa: E402
from netbox_bridge_test.models import Widget  # noqa: E402
from users.models import ObjectPermission, Token, User  # noqa: E402

WRITER_ACTIONS = ["view", "add", "change", "delete"]


def v2_token(user, description):
    token = Token(user=user, version=2, description=description)
    token.full_clean()
    token.save()
    # The plaintext exists only now; NetBox stores its HMAC digest (peppered).
    return f"nbt_{token.key}.{token.token}"


def v1_token(user, description):
    plaintext = secrets.token_hex(20)  # 40 hexadecimal characters
    token = Token(user=user, version=1, token=plaintext, description=description)
    token.full_clean()
    token.save()
    return plaintext


def permission(name, model_labels, actions, users):
    perm = ObjectPermission(name=name, actions=actions, enabled=True)
    perm.save()
    perm.object_types.set([ObjectType.objects.get_by_natural_key(*label.split(".")) for label in model_labels])
    perm.users.set(users)
    return perm


def main(out_path):
    admin_password = secrets.token_urlsafe(18)
    with transaction.atomic():
        admin = User.objects.create_superuser("admin", "admin@example.invalid", admin_password)
        users = {name: User.objects.create_user(name, f"{name}@example.invalid", secrets.token_urlsafe(18))
                 for name in ("alice", "bob", "reader", "nobody")}

        permission("e2e: widget writers", ["netbox_bridge_test.widget"], WRITER_ACTIONS,
                   [users["alice"], users["bob"]])
        permission("e2e: branch viewers", ["netbox_branching.branch"], ["view"],
                   [users["alice"], users["bob"]])
        permission("e2e: widget readers", ["netbox_bridge_test.widget"], ["view"], [users["reader"]])

        tokens = {
            "admin": v2_token(admin, "e2e admin"),
            "alice": v2_token(users["alice"], "e2e alice v2"),
            "alice_v1": v1_token(users["alice"], "e2e alice v1"),
            "bob": v2_token(users["bob"], "e2e bob"),
            "reader": v2_token(users["reader"], "e2e reader"),
            "nobody": v2_token(users["nobody"], "e2e nobody"),
        }

        utc = datetime.timezone.utc
        seeds = [
            ("alpha", 9007199254740993, datetime.datetime(2024, 2, 29, 12, 34, 56, 789000, tzinfo=utc),
             "serial is 2^53 + 1"),
            ("beta", 42, datetime.datetime(2025, 1, 1, 0, 0, 0, tzinfo=utc), "a small serial"),
            ("gamma", -9223372036854775808, None, "the smallest 64-bit serial, never observed"),
        ]
        for name, serial, observed, description in seeds:
            widget = Widget(name=name, serial=serial, observed=observed, description=description)
            widget.full_clean()
            widget.save()

    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"tokens": tokens, "admin_password": admin_password,
                   "users": ["admin", *users]}, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1])
