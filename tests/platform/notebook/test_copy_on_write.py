"""The injection copies on write: it never edits the pod it is handed, in any policy variant, so sharing
the untouched parts of the pod with its input cannot change what it answers (battery_golden checks the
answers themselves)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from tests.platform.notebook.test_cases import CASES
from tests.support import merge_patch
from tests.support import REPO, load_yaml
from webhook.platform.base import profile_info
from webhook.platform.notebook.config import compile_spec
from webhook.platform.notebook.inject import inject
from webhook.platform.notebook.render import InvalidOwner, render

DEFAULT = load_yaml(REPO / "policies" / "notebook-injection.yaml")[0]["spec"]
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "override": {"merge": {"env": "Override", "volumes": "Override", "volumeMounts": "Override", "workingDir": "Override"}},
    "keep": {"merge": {"env": "Keep", "volumes": "Keep", "volumeMounts": "Keep", "workingDir": "Keep"}},
    "relocate": {"home": {"workspace": {"action": "Relocate", "relocateTo": "/home/jovyan/workspace"}}},
    "plain": {"tokenRefresher": {"sidecar": "Plain"}},
    "all": {"containers": {"select": "All"}},
}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "jdoe", "annotations": {"owner": "jdoe@example.org"}}}


def _pods() -> list[tuple[str, dict[str, Any]]]:
    pods = [(case.name, load_yaml(case / "resource.yaml")[0]) for case in sorted(CASES.iterdir())
            if (case / "resource.yaml").exists()]
    base = load_yaml(REPO / "examples" / "notebook-pod.yaml")[0]
    aliased = copy.deepcopy(base)
    shared = aliased["spec"]["containers"][0]
    aliased["spec"]["containers"].append(shared)  # the same container twice, as a YAML alias makes it
    aliased["spec"]["containers"][0]["env"].append({"name": "HOME", "value": "/home/jovyan"})
    no_annotations = copy.deepcopy(base)
    no_annotations["metadata"].pop("annotations", None)
    # every injected item present with other content, so that an override replaces items in place
    conflicting = copy.deepcopy(base)
    conflicting["spec"]["volumes"][:0] = [{"name": n, "emptyDir": {}} for n in ("oidc-token", "oidc-credentials", "eos")]
    notebook = conflicting["spec"]["containers"][0]
    notebook["env"][:0] = [{"name": "OAUTH2_TOKEN", "value": "mine"}, {"name": "HOME", "value": "/home/jovyan"}]
    notebook["volumeMounts"][:0] = [{"name": "oidc-token", "mountPath": "/tmp/token"}, {"name": "x", "mountPath": "/eos"}]
    return pods + [("aliased-containers", aliased), ("no-annotations", no_annotations), ("conflicting", conflicting)]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_input_pod_is_never_edited(variant: str) -> None:
    spec = compile_spec(merge_patch(copy.deepcopy(DEFAULT), VARIANTS[variant]))
    for name, pod in _pods():
        before = orjson.dumps(pod)
        try:
            desired = render(spec, profile_info(NAMESPACE), None, 1000)
        except InvalidOwner:
            continue
        first = inject(spec, desired, pod)
        assert orjson.dumps(pod) == before, (variant, name)
        if first.changed:  # and the output, injected again, is neither edited nor changed
            output = orjson.dumps(first.pod)
            again = inject(spec, desired, first.pod)
            assert orjson.dumps(first.pod) == output, (variant, name)
            assert not again.changed or again.conflicts, (variant, name)


def test_same_path_is_normpath_equality() -> None:
    import itertools
    import posixpath

    from hypothesis import given, settings, strategies as st

    from webhook.platform.notebook.merge import same_path

    parts = ["/", "//", "///", ".", "..", "a", "b", "eos", "/a", "a/", "./", "../", "/.", "/..", ""]
    samples = ["".join(p) for n in range(4) for p in itertools.product(parts, repeat=n)]
    for a in samples:
        for b in ("/a", "/a/b", "/eos", "/", "//", "a", "/a/", "/a/.", samples[len(a) % len(samples)]):
            assert same_path(a, b) == (posixpath.normpath(a) == posixpath.normpath(b)), (a, b)
            assert same_path(b, a) == same_path(a, b)

    @settings(max_examples=2000)
    @given(st.text(alphabet="/.ab", max_size=12), st.text(alphabet="/.ab", max_size=12))
    def check(a: str, b: str) -> None:
        assert same_path(a, b) == (posixpath.normpath(a) == posixpath.normpath(b))
    check()
    assert not same_path(None, "/a") and not same_path("/a", 1)


def _same_json(a: Any, b: Any) -> bool:
    """Equal with the same types and key order throughout."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same_json(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    return bool(a == b)


@pytest.mark.parametrize("patch", [
    {}, {"tokenRefresher": {"sidecar": "Plain"}},
    {"tokenRefresher": {"args": ["--user={user}", "--dir={credentials_dir}"]}},  # per user: rendered each time
    {"tokenRefresher": {"env": [{"name": "WHO", "value": "{namespace}"}, {"name": "P", "value": "{token_path}"}]}},
    {"tokenRefresher": {"securityContext": {"runAsGroup": 100, "capabilities": {"drop": ["ALL"]}}}},
    {"tokenRefresher": {"startupProbe": {"command": ["test", "-e", "{home}/.ready"], "periodSeconds": 0}}},
    {"tokenRefresher": {"args": ["--literal={{braces}}", "--margin={refresh_margin_seconds}"]}},
])
def test_the_sidecar_made_once_per_policy_is_the_one_rendered_per_request(patch: dict[str, Any]) -> None:
    from webhook.platform.notebook import render as rendering

    spec = compile_spec(merge_patch(copy.deepcopy(DEFAULT), patch))
    refresher = spec.refresher
    assert refresher is not None
    for owner, uid in (("jdoe@example.org", 1000), ("a.b-c@example.org", 1), ("x@example.org", 2**40)):
        namespace = {**NAMESPACE, "metadata": {**NAMESPACE["metadata"], "annotations": {"owner": owner}}}
        desired = render(spec, profile_info(namespace), None, uid)
        values = {**rendering.owner_values(spec, profile_info(namespace)), **rendering._derived(refresher)}
        if spec.home:
            values["home"] = rendering._path(spec.home.home_path.render(values), "home path", profile_info(namespace))
        reference = rendering._sidecar(refresher, values, uid)
        assert orjson.dumps(desired.sidecar) == orjson.dumps(reference)
        assert _same_json(desired.sidecar, reference)
        again = render(spec, profile_info(namespace), None, uid)
        assert again.sidecar is not desired.sidecar and again.sidecar["securityContext"] is not desired.sidecar["securityContext"]
    static = all(t.names <= rendering.POLICY_PLACEHOLDERS for t in rendering._sidecar_templates(refresher))
    assert (refresher.memo["sidecar"] is not None) == static
