"""Kyverno's orValue compatibility (env "kyverno"): plain selections before `.orValue` are made optional."""

import pytest

from webhook.cel import CelCompiler, CelError
from webhook.cel.orvalue import rewrite_or_value


@pytest.mark.parametrize("source,expected", [
    ("container.volumeMounts.orValue([])", "container.?volumeMounts.orValue([])"),
    ("object.spec.?volumes.orValue([])", "object.?spec.?volumes.orValue([])"),
    ("resource.List('v1', 'pods', ns).items.orValue([])", "resource.List('v1', 'pods', ns).?items.orValue([])"),
    ("xs[0].name.orValue('')", "xs[?0].?name.orValue('')"),
    ("object.spec.containers.filter(c, true).orValue([])", "object.spec.containers.filter(c, true).orValue([])"),
    ("a ? b.c.orValue(1) : 2", "a ? b.?c.orValue(1) : 2"),
    ("'x.y.orValue(1)'", "'x.y.orValue(1)'"),
])
def test_rewrite(source, expected):
    assert rewrite_or_value(source) == expected


@pytest.mark.parametrize("backend", ["cel-expr-python"])
def test_kyverno_env_has_kyverno_semantics_and_admission_does_not(backend):
    cel = CelCompiler(backend)
    expression = "object.spec.volumes.orValue([]).size() + object.spec.containers.orValue([]).size()"
    assert cel.compile(expression, env="kyverno").evaluate({"object": {"spec": {"containers": [1, 2]}}}) == 2
    with pytest.raises(CelError):
        cel.compile(expression, env="admission").evaluate({"object": {"spec": {"containers": [1, 2]}}})
