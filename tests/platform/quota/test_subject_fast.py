"""_subject_object's shortcut (an object that already has the kind, apiVersion, name and namespace serves as it is)
gives what copying it gives: the same subject, an equal object with its keys in the same order, on random objects."""

from __future__ import annotations

import json
import random
from types import MappingProxyType
from typing import Any, Mapping

import pytest

from webhook.model.review import AdmissionRequest
from webhook.platform.quota.check import Subject
from webhook.platform.quota.policy import _subject_object
from tests.platform.quota.builders import pod, request


def _copied(request: AdmissionRequest, obj: Mapping[str, Any]) -> tuple[Subject, dict[str, Any]]:
    """The reference: the object always copied, with the kind, namespace and name set."""
    meta = dict(obj.get("metadata") or {})
    name = str(meta.get("name") or request.name or "")
    if not name:
        name = f"{meta.get('generateName', '')}<{request.uid}>"
    meta.update(name=name, namespace=request.namespace)
    full = {**obj, "kind": request.kind.kind, "apiVersion": obj.get("apiVersion", request.kind.api_version),
            "metadata": meta}
    return Subject(request.kind.kind, name, request.operation), full


def _usual(rng: random.Random) -> dict[str, Any]:
    """As the API server sends it, keys in any order."""
    meta = [("name", "nb"), ("namespace", "jdoe"), ("labels", {"a": "b"})]
    rng.shuffle(meta)
    keys = [("apiVersion", "v1"), ("kind", "Pod"), ("metadata", dict(meta)), ("spec", {"containers": []})]
    rng.shuffle(keys)
    return dict(keys)


def _object(rng: random.Random) -> Any:
    if rng.random() < 0.4:
        return _usual(rng)
    obj: dict[str, Any] = {}
    keys = ["apiVersion", "kind", "metadata", "spec", "status"]
    rng.shuffle(keys)
    for key in keys:
        roll = rng.random()
        if roll < 0.15:
            continue
        if key == "apiVersion":
            obj[key] = rng.choice(["v1", "apps/v1"])
        elif key == "kind":
            obj[key] = rng.choice(["Pod", "Pod", "Pod", "PersistentVolumeClaim", 3])
        elif key == "metadata":
            if roll < 0.2:
                obj[key] = rng.choice([None, {}, "x"])
                continue
            meta: dict[str, Any] = {}
            for field in rng.sample(["name", "namespace", "labels", "generateName"], rng.randint(0, 4)):
                meta[field] = {"name": rng.choice(["nb", "nb", "", 5, None]), "labels": {"a": "b"},
                               "generateName": "nb-", "namespace": rng.choice(["jdoe", "jdoe", "other", ""])}[field]
            obj[key] = meta if rng.random() < 0.9 else MappingProxyType(meta)
        else:
            obj[key] = {"containers": []}
    return obj if rng.random() < 0.9 else MappingProxyType(obj)


def _shape(value: Any) -> Any:
    """The value with every mapping as its list of items: equal only with the same keys in the same order."""
    if isinstance(value, Mapping):
        return [type(value).__name__] + [(k, _shape(v)) for k, v in value.items()]
    return value


def _answer(call: Any, req: AdmissionRequest, obj: Any) -> Any:
    try:
        subject, full = call(req, obj)
    except Exception as exc:  # the same error as before
        return f"{type(exc).__name__}: {exc}"
    return subject, _shape(full)


@pytest.mark.parametrize("seed", range(10))
def test_the_shortcut_gives_what_copying_gives(seed):
    rng = random.Random(seed)
    requests = [request(pod("nb")), request(pod("nb"), operation="UPDATE", old=pod("nb"))]
    served = 0
    for _ in range(300):
        req, obj = rng.choice(requests), _object(rng)
        assert _answer(_subject_object, req, obj) == _answer(_copied, req, obj), json.dumps(_shape(obj), default=str)
        served += type(_answer(_subject_object, req, obj)) is tuple and _subject_object(req, obj)[1] is obj
    assert 10 < served < 250  # both ways are taken
