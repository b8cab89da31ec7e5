"""A --state file is read with the bounded YAML reader that policies use: an alias bomb or an alias inside
the node it names stops `serve` at start-up with the file and line (exit 2), instead of being expanded
by whatever walks the seed as a tree (the seed's sharing, then every policy: minutes and gigabytes)."""

import pytest

from webhook.cli import main
from webhook.model.boundedyaml import MAX_ALIAS_NODES
from webhook.state.memory import InMemoryClusterState, StateSeedError

LEVELS, WIDTH = 6, 10  # 10^6 leaves: far past the reader's bound, yet small enough to load where it is unbounded
assert WIDTH ** LEVELS >= 100 * MAX_ALIAS_NODES

BOMB = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: laughs, namespace: jdoe}\ndata:\n"
        "  a0: &a0 [" + ", ".join(["lol"] * WIDTH) + "]\n"
        + "".join(f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * WIDTH) + "]\n" for i in range(1, LEVELS)))
BOMB_LINE = 3 + LEVELS  # the anchored list that the last line repeats: the heaviest alias

SELF = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop, namespace: jdoe}\ndata: &a\n  x: *a\n"
SELF_LINE = 4  # the anchored mapping that holds an alias of itself


@pytest.mark.parametrize(("text", "line", "problem"), [(BOMB, BOMB_LINE, "excessive aliasing"),
                                                       (SELF, SELF_LINE, "contains it")], ids=["bomb", "self"])
def test_an_alias_bomb_or_self_reference_is_refused_with_file_and_line(tmp_path, text, line, problem):
    (tmp_path / "ok.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: jdoe}\n")
    (tmp_path / "evil.yaml").write_text(text)
    with pytest.raises(StateSeedError, match=problem) as refused:
        InMemoryClusterState.from_directory(tmp_path)
    assert str(refused.value).startswith(f"{tmp_path / 'evil.yaml'}:{line}: invalid YAML: ")


@pytest.mark.parametrize("text", [BOMB, SELF], ids=["bomb", "self"])
def test_serve_exits_2_naming_the_file(tmp_path, monkeypatch, capsys, text):
    from webhook.app import Quartermaster

    async def served(self, *args, **kwargs):  # a state that loads would start serving: stop at once instead
        return None

    monkeypatch.setattr(Quartermaster, "serve", served)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "evil.yaml").write_text(text)
    (tmp_path / "policies").mkdir()
    code = main(["serve", "--allow-empty", "--policies", str(tmp_path / "policies"), "--state",
                 str(tmp_path / "state"), "--cert-dir", str(tmp_path / "certs")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"not serving: {tmp_path / 'state' / 'evil.yaml'}:" in err and "invalid YAML" in err
