"""MatchSpec.matches_statically (namespaced kinds first) and LabelSelector.matches (no generator for a selector
of none or one requirement) answer (or raise) exactly as the walk they replaced: every field, every selector
operator, odd label values included."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.model.cluster import CLUSTER_SCOPED
from webhook.model.selectors import MATCH_ALL, LabelSelector, Requirement
from webhook.policy.common import MatchSpec

KEYS = ["app", "team", "notebook-name"]
requirement = st.builds(Requirement, st.sampled_from(KEYS), st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
                        st.frozensets(st.sampled_from(["a", "b"]), max_size=2))
selector = st.one_of(st.just(MATCH_ALL), st.lists(requirement, min_size=1, max_size=3).map(
    lambda reqs: LabelSelector(tuple(reqs), everything=False)))
names = st.frozensets(st.sampled_from(["apps", "team-a", ""]), max_size=2)
spec = st.builds(MatchSpec, st.frozensets(st.sampled_from(["Pod", "Namespace", "Profile", "*"]), min_size=1, max_size=2),
                 st.frozensets(st.sampled_from(["CREATE", "UPDATE", "DELETE"]), min_size=1), selector, selector, names, names)
# labels as the API server sends them, and as a careless state file or policy might hold them
labels = st.one_of(st.none(), st.just({}), st.just([]), st.just(["app"]),
                   st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["a", "b", "c"]), max_size=3))
metadata = st.one_of(st.none(), st.just(["odd"]), st.builds(lambda n, l: {"name": n, "labels": l} if l is not None else {"name": n},
                                          st.sampled_from(["apps", "team-a", "x"]), labels))
subject = st.one_of(st.none(), st.builds(lambda m: {} if m is None else {"metadata": m}, metadata))
request = st.builds(lambda kind, sub, op, ns, old: SimpleNamespace(
    kind=SimpleNamespace(kind=kind), sub_resource=sub, operation=op, namespace=ns, old_object=old),
    st.sampled_from(["Pod", "Namespace", "Profile", "PersistentVolumeClaim"]), st.sampled_from(["", "status"]),
    st.sampled_from(["CREATE", "UPDATE", "DELETE"]), st.sampled_from(["apps", "team-a", ""]), subject)


def _reference(self: MatchSpec, request, obj, namespace) -> bool:
    """The walk as it was, selectors included."""
    if request.sub_resource:
        return False
    if "*" not in self.kinds and request.kind.kind not in self.kinds:
        return False
    if request.operation not in self.operations:
        return False
    subject = obj if obj is not None else (request.old_object or {})
    if request.kind.kind in CLUSTER_SCOPED and request.kind.kind != "Namespace":
        ns_name, ns_labels = "", None
    elif request.kind.kind == "Namespace":
        ns_name = (subject.get("metadata") or {}).get("name", "")
        ns_labels = (subject.get("metadata") or {}).get("labels")
    else:
        ns_name = request.namespace
        ns_labels = ((namespace or {}).get("metadata") or {}).get("labels")
    if not self.matches_namespace_name(ns_name):
        return False
    if ns_labels is not None or request.kind.kind not in CLUSTER_SCOPED:
        if not _selector_walk(self.namespace_selector, ns_labels):
            return False
    return _selector_walk(self.object_selector, (subject.get("metadata") or {}).get("labels"))


def _selector_walk(selector: LabelSelector, labels) -> bool:
    labels = labels or {}
    return all(r.matches(labels) for r in selector.requirements)


def _outcome(call):
    try:
        return call()
    except Exception as exc:  # the dispatcher turns it into the failure policy's answer: the same one, then
        return type(exc), str(exc)


@settings(max_examples=750, deadline=None)
@given(spec, request, subject, subject)
def test_matches_statically_agrees_with_the_walk_it_replaced(match, review, obj, namespace):
    assert _outcome(lambda: match.matches_statically(review, obj, namespace)) == \
        _outcome(lambda: _reference(match, review, obj, namespace))


def test_the_batteries_selectors_match_as_they_say():
    """A one-requirement namespace selector and an Exists object selector, as NotebookInjection has them."""
    profile = LabelSelector((Requirement("app.kubernetes.io/part-of", "In", frozenset({"kubeflow-profile"})),), False)
    notebook = LabelSelector((Requirement("notebook-name", "Exists", frozenset()),), False)
    match = MatchSpec(frozenset({"Pod"}), frozenset({"CREATE"}), profile, notebook)
    review = SimpleNamespace(kind=SimpleNamespace(kind="Pod"), sub_resource="", operation="CREATE", namespace="u",
                             old_object=None)
    ns = {"metadata": {"labels": {"app.kubernetes.io/part-of": "kubeflow-profile"}}}
    assert match.matches_statically(review, {"metadata": {"labels": {"notebook-name": "n"}}}, ns)
    assert not match.matches_statically(review, {"metadata": {"labels": {"app": "n"}}}, ns)
    assert not match.matches_statically(review, {"metadata": {"labels": {"notebook-name": "n"}}}, {"metadata": {}})
