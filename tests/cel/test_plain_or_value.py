"""cel-go's `orValue` on a receiver that is not an optional returns the receiver (its value, or its error): the
Kubernetes environments (admission, mutating) agree with the API server (tests/cluster/test_vap_oracle.py)."""

from __future__ import annotations

import pytest

from webhook.cel import CelCompiler, CelError
from webhook.cel.orvalue import rewrite_plain_or_value

POD = {"object": {"metadata": {"labels": {"app": "web"}},
                  "spec": {"containers": [{"name": "c", "volumeMounts": [{"name": "v"}], "resources": {}}]}}}


@pytest.mark.parametrize("source, expected", [
    ("c.volumeMounts.orValue([])", "c.volumeMounts"),
    ("object.spec.x[0].orValue(1) + a.b['k'].orValue(2)", "object.spec.x[0] + a.b['k']"),
    ("a.b.orValue(c.d.orValue(1))", "a.b"),
    # may be optionals: left to the optional overload
    ("object.?spec.x.orValue(1)", "object.?spec.x.orValue(1)"),
    ("x[?0].orValue(1)", "x[?0].orValue(1)"),
    ("variables.v.orValue(1)", "variables.v.orValue(1)"),
    ("f(x).y.orValue(1)", "f(x).y"),
    ("resource.List('v1', 'pods', ns).items.orValue([])", "resource.List('v1', 'pods', ns).items"),
    ("f(x)[0].orValue(1)", "f(x)[0]"),
    ("f(x).orValue(1)", "f(x).orValue(1)"),
    ("optional.of(1).orValue(2)", "optional.of(1).orValue(2)"),
    ("x.orValue(1)", "x.orValue(1)"),
])
def test_rewrite(source: str, expected: str) -> None:
    assert rewrite_plain_or_value(source) == expected


@pytest.mark.parametrize("env", ["admission", "mutating"])
def test_a_present_plain_field_is_its_value(env: str) -> None:
    cel = CelCompiler()
    assert cel.compile("object.spec.containers[0].volumeMounts.orValue([])", env=env).evaluate(POD, None) == [{"name": "v"}]
    assert cel.compile("object.metadata.labels.orValue({})", env=env).evaluate(POD, None) == {"app": "web"}
    assert cel.compile("object.metadata.?annotations.orValue({})", env=env).evaluate(POD, None) == {}


def test_a_missing_plain_field_stays_an_error() -> None:
    with pytest.raises(CelError):
        CelCompiler().compile("object.spec.containers[0].resources.requests.orValue({})").evaluate(POD, None)
