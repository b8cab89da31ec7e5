"""Placeholder templates: checked at compile time, rendered per owner."""

from __future__ import annotations

import pytest

from webhook.model.errors import PolicyCompileError
from webhook.platform.notebook.template import OWNER_PLACEHOLDERS, compile_template, compile_tree

OWNER = {"user": "jdoe", "user_initial": "j", "namespace": "jdoe-team"}


def test_placeholders_render_for_the_owner() -> None:
    template = compile_template("/eos/user/{user_initial}/{user}/{namespace}", "spec.home.mountPath", OWNER_PLACEHOLDERS)
    assert template.names == {"user", "user_initial", "namespace"}
    assert template.render(OWNER) == "/eos/user/j/jdoe/jdoe-team"


def test_doubled_braces_are_literal() -> None:
    template = compile_template('{{"user": "{user}"}}', "spec.tokenRefresher.args[0]", OWNER_PLACEHOLDERS)
    assert template.render(OWNER) == '{"user": "jdoe"}'


@pytest.mark.parametrize("text, words", [
    ("/home/{User}", "unknown placeholder {User}"),
    ("/home/{}", "unknown placeholder {}"),
    ("/home/{0}", "unknown placeholder {0}"),
    ("/home/{user.__class__}", "unknown placeholder {user.__class__}"),
    ("/home/{user[0]}", "unknown placeholder {user[0]}"),
    ("/home/{user:>10}", "takes no format"),
    ("/home/{user!s}", "takes no format"),
    ("/home/{user", "literal brace"),
    ("/home/user}", "literal brace"),
])
def test_bad_templates_name_their_field(text: str, words: str) -> None:
    with pytest.raises(PolicyCompileError) as info:
        compile_template(text, "spec.home.mountPath", OWNER_PLACEHOLDERS)
    assert info.value.field == "spec.home.mountPath"
    assert words in info.value.message


def test_a_tree_renders_fresh_copies_and_names_nested_fields() -> None:
    tree = compile_tree({"csi": {"driver": "eos.csi.example.org", "readOnly": False,
                                 "volumeAttributes": {"path": "/eos/user/{user_initial}/{user}"}}},
                        "spec.home.volume", OWNER_PLACEHOLDERS)
    first = tree.render(OWNER)
    assert first == {"csi": {"driver": "eos.csi.example.org", "readOnly": False,
                             "volumeAttributes": {"path": "/eos/user/j/jdoe"}}}
    first["csi"]["driver"] = "changed"
    assert tree.render(OWNER)["csi"]["driver"] == "eos.csi.example.org"
    with pytest.raises(PolicyCompileError) as info:
        compile_tree({"nfs": {"server": "nfs", "path": ["/a", "/{who}"]}}, "spec.home.volume", OWNER_PLACEHOLDERS)
    assert info.value.field == "spec.home.volume.nfs.path[1]"
