"""docs/security.md names the test that shows each mitigation: every one it names must exist."""

import re

from tests.support import REPO

DOC = (REPO / "docs" / "security.md").read_text()


def test_the_threat_table_has_all_eighteen_threats():
    numbers = [int(n) for n in re.findall(r"^\| (\d+) \|", DOC, flags=re.M)]
    assert numbers == list(range(1, 19))


def test_every_named_test_exists():
    missing = []
    for path, name in re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)(?:::(\w+))?", DOC):
        where = REPO / path if path.startswith("load-tests/") else REPO / "tests" / path
        if not where.exists():
            missing.append(path)
        elif name and not re.search(rf"def {name}\b", where.read_text()):
            missing.append(f"{path}::{name}")
    assert not missing, missing


def test_every_test_named_after_a_path_exists_somewhere():
    defined = {m for path in (REPO / "tests").rglob("test_*.py") for m in re.findall(r"def (test_\w+)", path.read_text())}
    named = set(re.findall(r"::(test_\w+)", DOC))
    assert named and named <= defined, named - defined
