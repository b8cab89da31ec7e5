"""Generated pods and expressions (tests.oracle.generate) through our three paths against Kubernetes' own CEL."""

from __future__ import annotations

import random

import pytest

from tests.cel.differential import activation
from tests.oracle.differential import Tally, compare
from tests.oracle.generate import expression, pod

pytestmark = pytest.mark.oracle
EXPRESSIONS, PODS_EACH = 2600, 6   # > 10,000 evaluations on each backend (cel-python lacks some syntax)


@pytest.mark.parametrize("seed", range(4))
def test_generated_expressions_agree_with_kubernetes(cel_oracle, seed):
    rng = random.Random(seed)
    tally = Tally()
    for _ in range(EXPRESSIONS // 4):
        text = expression(rng)
        for _ in range(PODS_EACH):
            bindings = {k: v for k, v in activation(pod(rng)).items() if k != "variables" and v is not None}
            compare(cel_oracle, tally, text, bindings)
    print(f"\ngenerated (seed {seed}): {tally.summary()}")
    assert tally.evaluations["cel-expr-python"] == EXPRESSIONS // 4 * PODS_EACH
    assert tally.evaluations["cel-python"] > EXPRESSIONS // 4 * PODS_EACH * 0.6   # what it lacks is counted apart
    assert not tally.differences, "\n".join(tally.differences[:40])
