"""parse_review's one-pass path for the usual review (`_usual_request`) against the reference checks
(`_request_of`): on reviews with random values planted in their fields, the usual path either declines
(None) or gives what the reference gives, the same request or the same MalformedReview reason; and
parse_review as a whole always gives the reference's answer."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kinds import pod
from tests.support import review
from webhook.model.errors import MalformedReview
from webhook.model.review import _request_of, _usual_request, parse_review

ABSENT = object()
_text = st.sampled_from(["", "v1", "Pod", "pods", "jdoe", "p", "CREATE", "UPDATE", "DELETE", "apps", "x"])
_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), _text)
_value = st.one_of(st.just(ABSENT), st.none(), _leaf, st.lists(_leaf, max_size=3), st.dictionaries(_text, _leaf, max_size=3),
                   st.dictionaries(_text, st.lists(_leaf, max_size=2), max_size=2), st.just(ABSENT))
# the fields the reference reads (the objects' own fields: tests/model/test_review.py, test_shapes.py)
PATHS = [("apiVersion",), ("kind",), ("request",), ("request", "uid"), ("request", "kind"),
         ("request", "kind", "group"), ("request", "kind", "version"), ("request", "kind", "kind"),
         ("request", "resource"), ("request", "resource", "group"), ("request", "resource", "version"),
         ("request", "resource", "resource"), ("request", "requestKind"), ("request", "requestKind", "group"),
         ("request", "requestKind", "kind"), ("request", "requestResource"),
         ("request", "requestResource", "resource"), ("request", "requestResource", "version"),
         ("request", "subResource"), ("request", "requestSubResource"), ("request", "name"),
         ("request", "namespace"), ("request", "operation"), ("request", "userInfo"),
         ("request", "userInfo", "username"), ("request", "userInfo", "uid"), ("request", "userInfo", "groups"),
         ("request", "userInfo", "extra"), ("request", "dryRun"), ("request", "object"), ("request", "oldObject"),
         ("request", "options"), ("request", "object", "metadata"), ("request", "object", "metadata", "name"),
         ("request", "object", "metadata", "namespace"), ("request", "object", "kind"),
         ("request", "object", "spec", "containers")]


ODD = [ABSENT, None, True, 0, 1, "", "x", "CREATE", [], ["x"], [1], {}, {"x": "y"}, {"x": ["y"]}, {"x": [1]}]


def _base(variant: int) -> dict:
    if variant == 0:
        return review(pod(labels={"team": "a"}))
    if variant == 1:
        return review(pod("p"), operation="UPDATE", old=pod("p"), dry_run=True)
    doc = review(None, operation="DELETE", old=pod("gone"))
    doc["request"]["userInfo"]["extra"] = {"scopes": ["a", "b"]}
    return doc


def _plant(doc: dict, path: tuple[str, ...], value: object) -> None:
    node = doc
    for step in path[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(step), dict):
            return  # a container on the way was replaced already
        node = node[step]
    if value is ABSENT:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = copy.deepcopy(value)


def _answer(run):
    try:
        return "request", run()
    except MalformedReview as exc:
        return "refused", str(exc)


def _agree(doc: dict) -> None:
    body = json.dumps(doc).encode()
    reference = _answer(lambda: _request_of(json.loads(body), body))
    usual = _answer(lambda: _usual_request(json.loads(body), body))
    if usual != ("request", None):
        assert usual == reference, body
    assert _answer(lambda: parse_review(body)) == reference


def test_each_field_with_each_odd_value():
    for variant in range(3):
        for path in PATHS:
            for value in ODD:
                doc = _base(variant)
                _plant(doc, path, value)
                _agree(doc)


@settings(max_examples=1000, deadline=None)
@given(variant=st.integers(0, 2), plants=st.lists(st.tuples(st.sampled_from(PATHS), _value), max_size=3))
def test_the_usual_path_declines_or_agrees_with_the_reference(variant, plants):
    doc = _base(variant)
    for path, value in plants:
        _plant(doc, path, value)
    _agree(doc)


def test_the_usual_reviews_take_the_usual_path():
    for variant in range(3):
        body = json.dumps(_base(variant)).encode()
        request = _usual_request(json.loads(body), body)
        assert request is not None and request == _request_of(json.loads(body), body)
