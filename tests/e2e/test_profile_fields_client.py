"""Custom profile fields through the official ``zulip`` client, against a real
``hubbub serve``: an administrator defines fields, a member fills them in."""

from __future__ import annotations

import zulip

from tests.e2e.client import assert_ok, close, make_client
from tests.e2e.conftest import HubbubServer


def _member(owner: zulip.Client, server: HubbubServer) -> zulip.Client:
    assert_ok(
        owner.create_user(
            {
                "email": "cordelia@example.com",
                "password": "a long password",
                "full_name": "Cordelia",
            }
        )
    )
    key = assert_ok(
        owner.call_endpoint(
            url="fetch_api_key",
            method="POST",
            request={"username": "cordelia@example.com", "password": "a long password"},
        )
    )["api_key"]
    return make_client(email="cordelia@example.com", api_key=key, site=server.url)


def test_profile_fields_and_values(hubbub_server: HubbubServer) -> None:
    owner = make_client(config_file=str(hubbub_server.data_dir / "zuliprc"))
    member = _member(owner, hubbub_server)
    try:
        phone = assert_ok(owner.create_realm_profile_field(name="Phone", hint="Work", field_type=1))
        choices = {"vim": {"text": "Vim", "order": "1"}, "emacs": {"text": "Emacs", "order": "2"}}
        editor = assert_ok(
            owner.create_realm_profile_field(name="Editor", field_type=3, field_data=choices)
        )
        github = assert_ok(
            owner.create_realm_profile_field(field_type=7, field_data={"subtype": "github"})
        )
        phone_id, editor_id, github_id = phone["id"], editor["id"], github["id"]
        assert_ok(owner.update_realm_profile_field(field_id=phone_id, name="Mobile"))
        assert_ok(owner.reorder_realm_profile_fields(order=[github_id, editor_id, phone_id]))
        fields = assert_ok(member.get_realm_profile_fields())["custom_fields"]
        assert [(f["id"], f["name"]) for f in fields] == [
            (github_id, "GitHub username"),
            (editor_id, "Editor"),
            (phone_id, "Mobile"),
        ]
        # Members cannot define fields.
        denied = member.create_realm_profile_field(name="Nope", field_type=1)
        assert denied["result"] == "error"
        assert denied["msg"] == "Must be an organization administrator"

        data = [{"id": phone_id, "value": "555"}, {"id": editor_id, "value": "vim"}]
        assert_ok(
            member.call_endpoint(
                url="users/me/profile_data", method="PATCH", request={"data": data}
            )
        )
        assert_ok(
            member.call_endpoint(
                url="users/me/profile_data", method="DELETE", request={"data": [editor_id]}
            )
        )
        me = assert_ok(member.get_profile())
        user = assert_ok(owner.get_user_by_id(me["user_id"], include_custom_profile_fields=True))
        assert user["user"]["profile_data"] == {
            str(phone_id): {"value": "555", "rendered_value": "<p>555</p>"}
        }
        assert_ok(owner.remove_realm_profile_field(field_id=phone_id))
        user = assert_ok(owner.get_user_by_id(me["user_id"], include_custom_profile_fields=True))
        assert user["user"]["profile_data"] == {}
        state = assert_ok(member.register(event_types=["custom_profile_fields"]))
        assert [f["id"] for f in state["custom_profile_fields"]] == [github_id, editor_id]
        assert state["custom_profile_field_types"]["USER"] == {"id": 6, "name": "Person picker"}
    finally:
        close(member)
        close(owner)
