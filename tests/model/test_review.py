import base64
import json

import pytest

from webhook.model.errors import MalformedReview
from webhook.model.review import encode_response, parse_review
from webhook.model.kubetext import annotation_key, clean_warning
from webhook.model.verdict import Verdict
from tests.support import review
from tests.kinds import pod


def body(doc) -> bytes:
    return json.dumps(doc).encode()


def test_parse_full_request():
    doc = review(pod(), namespace="jdoe", dry_run=True, uid="abc")
    req = parse_review(body(doc))
    assert req.uid == "abc" and req.operation == "CREATE" and req.namespace == "jdoe" and req.dry_run
    assert req.kind.kind == "Pod" and req.kind.api_version == "v1" and req.resource == "pods"
    assert req.user.username == "jdoe@example.org" and req.user.groups == ("system:authenticated",)
    assert req.object["metadata"]["name"] == "p" and req.object_name == "p"


def test_parse_delete_uses_old_object():
    req = parse_review(body(review(None, operation="DELETE", old=pod("gone"))))
    assert req.object is None and req.subject["metadata"]["name"] == "gone"


@pytest.mark.parametrize("raw, reason", [
    (b"not json", "not JSON"),
    (b"[]", "JSON object"),
    (body({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}}), "apiVersion"),
    (body({"apiVersion": "admission.k8s.io/v1", "kind": "Pod"}), "kind must be AdmissionReview"),
    (body({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}), "request is missing"),
    (b"\xff\xfe", "not JSON"),
])
def test_malformed_bodies(raw, reason):
    with pytest.raises(MalformedReview, match=reason):
        parse_review(raw)


@pytest.mark.parametrize("field, value, reason", [
    ("uid", "", "uid"),
    ("uid", 5, "uid"),
    ("kind", "Pod", "request.kind"),
    ("kind", {"group": "", "version": "v1", "kind": 3}, "request.kind.kind"),
    ("operation", "PATCH", "operation"),
    ("object", [1], "object"),
    ("object", None, "object is required"),
    ("dryRun", "yes", "dryRun"),
    ("namespace", 7, "namespace"),
    ("userInfo", {"groups": "admins"}, "groups"),
    ("userInfo", {"username": ["root"]}, "username"),
    ("operation", ["CREATE"], "operation"),
    ("operation", {"op": 1}, "operation"),
    ("operation", 3, "operation"),
    ("resource", {"resource": ["pods"]}, "request.resource.resource"),
    ("kind", {"group": 1, "version": "v1", "kind": "Pod"}, r"request\.kind\.group must be a string"),
    ("kind", {"version": None, "kind": "Pod"}, r"request\.kind\.version must be a string"),
    ("userInfo", {"groups": ["admins", 1]}, "groups must be a list of strings"),
    ("userInfo", {"extra": {"scopes": ["a", None]}}, "extra must map names to lists of strings"),
    ("userInfo", {"extra": {"scopes": "a"}}, "extra must map names to lists of strings"),
    ("requestKind", {"group": "", "version": "v1", "kind": 2}, "requestKind must be an object with string"),
    ("requestResource", {"group": [], "version": "v1", "resource": "pods"}, "requestResource must be an object with"),
    # falsy values of the wrong type were taken for "no value" (`x or default`), and 0 became the user "0"
    ("userInfo", {"username": 0}, "username must be a string"),
    ("userInfo", {"username": []}, "username must be a string"),
    ("userInfo", {"username": "u", "uid": 7}, "uid must be a string"),
    ("userInfo", {"groups": 0}, "groups must be a list of strings"),
    ("userInfo", {"groups": {}}, "groups must be a list of strings"),
    ("userInfo", {"extra": ""}, "extra must map names to lists of strings"),
    ("userInfo", [], "userInfo must be an object"),
    ("userInfo", "", "userInfo must be an object"),
    ("resource", [], "request.resource must be an object"),
    ("resource", {"group": 5, "version": "v1", "resource": "pods"}, r"request\.resource\.group must be a string"),
    ("resource", {"group": "", "version": 1, "resource": "pods"}, r"request\.resource\.version must be a string"),
    ("resource", {"resource": 0}, r"request\.resource\.resource must be a string"),
    ("requestSubResource", 5, "requestSubResource must be a string"),
])
def test_wrong_types(field, value, reason):
    doc = review(pod())
    doc["request"][field] = value
    with pytest.raises(MalformedReview, match=reason):
        parse_review(body(doc))


def test_encode_allowed_without_patch_has_no_patch_type():
    out = encode_response("u1", Verdict(True))
    assert out == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "u1", "allowed": True}}


def test_encode_patch_and_denial():
    ops = ({"op": "add", "path": "/metadata/labels/a", "value": "b"},)
    out = encode_response("u2", Verdict(True, patch=ops, warnings=("w",), audit_annotations={"k": "v"}))["response"]
    assert out["patchType"] == "JSONPatch" and json.loads(base64.b64decode(out["patch"])) == list(ops)
    assert out["warnings"] == ["w"] and out["auditAnnotations"] == {"k": "v"}
    denied = encode_response("u3", Verdict(False, code=403, message="no", reason="Forbidden"))["response"]
    assert denied["allowed"] is False and denied["status"] == {"code": 403, "message": "no", "reason": "Forbidden"}
    assert "patch" not in denied and "patchType" not in denied


def test_warnings_are_clean_and_short():
    text = clean_warning("line one\nline\ttwo\x1b[31m" + "x" * 200)
    assert not any(ord(c) < 32 for c in text) and len(text) <= 120 and text.endswith("...")
    assert clean_warning("short") == "short"


def test_annotation_key_is_a_label_name():
    key = annotation_key("profile-quota", "gpus/limit")
    assert key == "profile-quota.gpus-limit" and len(annotation_key("p" * 100, "r")) <= 63


@pytest.mark.parametrize("mutate, reason", [
    (lambda o: o.update(metadata=[1]), r"request.object.metadata must be an object"),
    (lambda o: o.update(metadata="x"), r"request.object.metadata must be an object"),
    (lambda o: o["metadata"].update(labels={"a": True}), r"labels\['a'\] must be a string, got bool"),
    (lambda o: o["metadata"].update(labels={"a": 1}), r"labels\['a'\] must be a string, got int"),
    (lambda o: o["metadata"].update(labels={"a": 1.5}), r"labels\['a'\] must be a string, got float"),
    (lambda o: o["metadata"].update(labels=["a"]), r"labels must be an object"),
    (lambda o: o["metadata"].update(annotations={"a": None}), r"annotations\['a'\] must be a string"),
    (lambda o: o["metadata"].update(name=5), r"metadata.name must be a string"),
    (lambda o: o["metadata"].update(ownerReferences=["x"]), r"ownerReferences"),
    (lambda o: o["metadata"].update(finalizers=[1]), r"finalizers"),
    (lambda o: o.update(spec="nope"), r"request.object.spec must be an object"),
    (lambda o: o.update(kind=1), r"request.object.kind must be a string"),
])
def test_object_shape_checked_once_at_the_edge(mutate, reason):
    doc = review(pod(labels={"team": "a"}))
    mutate(doc["request"]["object"])
    with pytest.raises(MalformedReview, match=reason):
        parse_review(body(doc))


def test_old_object_shape_checked_too():
    doc = review(pod(), operation="UPDATE", old=pod())
    doc["request"]["oldObject"]["metadata"] = 7
    with pytest.raises(MalformedReview, match="request.oldObject.metadata"):
        parse_review(body(doc))


@pytest.mark.parametrize("depth", [150, 5_000, 100_000])
def test_deep_json_is_malformed_not_a_recursion_error(depth):
    doc = review(pod())
    raw = body(doc).replace(b'"spec": {', b'"spec": {"deep": ' + b"[" * depth + b"]" * depth + b", ", 1)
    with pytest.raises(MalformedReview, match="nested deeper"):
        parse_review(raw)


def test_nan_and_infinity_are_not_json():
    raw = body(review(pod())).replace(b'"spec": {', b'"spec": {"x": NaN, ', 1)
    with pytest.raises(MalformedReview, match="NaN"):
        parse_review(raw)


@pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"1.5e999"])
def test_numbers_beyond_a_double_are_not_json_we_accept(number):
    """The fallback parser made them inf, which policies then met as a number (orjson and Go refuse them)."""
    raw = body(review(pod())).replace(b'"spec": {', b'"spec": {"x": ' + number + b", ", 1)
    with pytest.raises(MalformedReview, match="beyond the range of a double"):
        parse_review(raw)
    assert parse_review(body(review(pod())).replace(b'"spec": {', b'"spec": {"x": 1e-400, "y": -0.0, ', 1))


@pytest.mark.parametrize("field, escape", [("namespace", "\\ud800"), ("uid", "\\udfff"), ("name", "x\\udc00"),
                                           ("namespace", "\\ud83d")])
def test_lone_surrogates_are_not_unicode_text(field, escape):
    """orjson refuses them; the fallback parser made them a str no UTF-8 encoder accepts (metrics, logs, reports)."""
    text = json.dumps(review(pod()))
    text = text.replace(f'"{field}": "', f'"{field}": "{escape}', 1)
    assert escape in text
    with pytest.raises(MalformedReview, match="lone UTF-16 surrogate"):
        parse_review(text.encode())


def test_surrogate_pairs_and_huge_integers_still_parse():
    doc = review(pod())
    text = json.dumps(doc).replace('"uid": "', '"uid": "\\ud83d\\ude00', 1).replace('"dryRun": false', '"dryRun": false, "x": 123456789012345678901234567890')
    assert "123456789012345678901234567890" in text  # orjson refuses it: the fallback parser reads this body
    assert parse_review(text.encode()).uid.startswith("\U0001F600")


_KINDS = [None, {"group": "", "version": "v1", "kind": "Pod"}, {"version": "v1", "kind": "Pod"},
          {"group": "", "version": "v1beta1", "kind": "Pod"}, {"group": "apps", "version": "v1", "kind": "Pod"}, {}]
_RESOURCES = [None, {"group": "", "version": "v1", "resource": "pods"}, {"version": "v1", "resource": "pods"},
              {"group": "", "version": "v1beta1", "resource": "pods"}, {}, {"resource": "pods"}]


@pytest.mark.parametrize("request_kind", _KINDS)
@pytest.mark.parametrize("resource, request_resource", [(r, rr) for r in _RESOURCES for rr in _RESOURCES])
def test_request_kind_and_resource_are_what_was_sent(request_kind, resource, request_resource):
    """requestKind/requestResource equal to kind/resource (the API server's usual review) take a shortcut:
    each field still comes out as sent, None when absent or null, empty where a field is missing."""
    doc = review(pod(), namespace="jdoe")
    doc["request"].update(kind={"group": "", "version": "v1", "kind": "Pod"}, resource=resource,
                          requestKind=request_kind, requestResource=request_resource)
    req = parse_review(body(doc))
    expected_kind = None if request_kind is None else (request_kind.get("group", ""), request_kind.get("version", ""),
                                                       request_kind.get("kind", ""))
    got_kind = None if req.request_kind is None else (req.request_kind.group, req.request_kind.version,
                                                      req.request_kind.kind)
    assert got_kind == expected_kind
    expected_resource = None if request_resource is None else (
        request_resource.get("group", ""), request_resource.get("version", ""), request_resource.get("resource", ""))
    got_resource = None if req.request_resource is None else (
        req.request_resource.group, req.request_resource.version, req.request_resource.resource)
    assert got_resource == expected_resource
    assert req.resource == (resource or {}).get("resource", "")
