"""Property: any policy document, however mangled, is accepted or refused with a reason naming the file;
loading never raises, and a refused edit leaves the previous policies serving."""

import copy
import random

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.fuzz.support import VALUES, _parent, paths
from tests.support import REPO, load_yaml
from webhook.app import Quartermaster, Settings

SEEDS = [doc for path in sorted((REPO / "policies").glob("*.yaml")) for doc in load_yaml(path)]


@st.composite
def mangled_policy(draw):
    doc = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from([p for p in paths(doc) if p]))
        parent, last = _parent(doc, path), path[-1]
        if draw(st.booleans()):
            parent[last] = draw(VALUES)
        else:
            del parent[last]
    return doc


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """One policy file, first the shipped quota policy; each example replaces its content."""
    directory = tmp_path_factory.mktemp("fuzz-policies")
    (directory / "mangled.yaml").write_text((REPO / "policies" / "profile-quota.yaml").read_text())
    qm = Quartermaster.build(Settings(policies=directory))
    qm.load_policies()
    return qm, directory


@settings(max_examples=500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(doc=mangled_policy(), text_damage=st.sampled_from([None, None, None, "truncate", "control"]))
def test_any_policy_document_is_accepted_or_refused_with_a_reason(source, doc, text_damage):
    qm, directory = source
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    if text_damage == "truncate":
        text = text[: random.Random(len(text)).randrange(len(text) + 1)]
    elif text_damage == "control":
        text = text.replace(":", ":\x01", 1)
    (directory / "mangled.yaml").write_text(text)
    generation = qm.store.snapshot.generation
    result = qm.source.reload()  # must not raise
    for error in result.errors:
        assert error.file and error.message, error
        assert "Traceback" not in error.message
    if result.errors:
        assert qm.store.snapshot.generation == generation  # refused: the previous policies keep serving
        assert qm.store.snapshot.validators or qm.store.snapshot.mutators
