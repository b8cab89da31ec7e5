"""cel-expr-python's results with nulls must not cost None a reference each (webhook.cel.nullrefs): on CPython
before 3.12 the process would abort once None's count reaches zero."""

import gc
import sys

from webhook.cel import Activation, CelCompiler
from webhook.cel.nullrefs import nones

CPP = CelCompiler("cel-expr-python")


def _drift(run, count: int) -> int:
    for _ in range(5):
        run()
    gc.collect()
    before = sys.getrefcount(None)
    for _ in range(count):
        run()
    gc.collect()
    return sys.getrefcount(None) - before


def test_results_with_nulls_keep_nones_references():
    values = {"object": {"metadata": {"creationTimestamp": None, "labels": {"a": None}}, "spec": [None, 1]}}
    reference = CPP.compile("[dyn(null), object.metadata, object.spec, dyn({'k': null})]")
    strict = CPP.compile_bound("[dyn(null), object.metadata, object.spec, dyn({'k': null})]", [], "admission", strict=True)
    assert reference.evaluate(values)[0] is None and strict.evaluate_strict(Activation(values))[3] == {"k": None}
    count = 5_000  # 6 nulls each: 30,000 references lost without the fix
    assert abs(_drift(lambda: reference.evaluate(values), count)) < 1_000
    assert abs(_drift(lambda: strict.evaluate_strict(Activation(values)), count)) < 1_000
    assert abs(_drift(lambda: CPP.compile("null").evaluate({}), count)) < 1_000


def test_nones_counts_every_null_of_a_result():
    assert nones(None) == 1 and nones(0) == 0 and nones("") == 0
    assert nones([None, [None, {"a": None, "b": [None]}], {}, 1]) == 4
    assert nones({"a": None, "b": {"c": None}, "d": [None, None]}) == 4


def test_a_list_of_type_values_is_a_value_not_a_type_error():
    """A CEL type value's `==` refuses None: nulls are counted by identity (list.count(None) raised TypeError)."""
    assert [str(t) for t in CPP.compile("[type(1), int]").evaluate({})] == ["INT", "INT"]
    with_null = CPP.compile("{'a': [dyn(type('s')), dyn(null)]}").evaluate({})
    assert str(with_null["a"][0]) == "STRING" and with_null["a"][1] is None
