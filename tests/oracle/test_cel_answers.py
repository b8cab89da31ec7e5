"""The rows of tests/cel/test_kubernetes_answers.py are Kubernetes' own answers: checked against the oracle."""

from __future__ import annotations

import pytest

from tests.cel.test_kubernetes_answers import ANSWERS, OBJECT, REFUSED
from tests.oracle.typed import from_ours

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("expression, expected", ANSWERS)
def test_the_table_is_kubernetes_answer(cel_oracle, expression, expected):
    told = cel_oracle.evaluate(expression, {"object": OBJECT})
    if expected is REFUSED:
        assert told.error == "compile", told
    else:
        assert told.value is not None and from_ours(expected)[1] == told.value[1], told
