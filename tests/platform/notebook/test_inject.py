"""Rendering and injection on their own: what goes where, owners, volume templates, idempotence."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.platform.notebook.test_cases import CASES
from tests.support import merge_patch
from tests.support import REPO, assert_valid_k8s, load_yaml
from webhook.platform.base import profile_info
from webhook.platform.notebook.config import NotebookSpec, compile_spec
from webhook.platform.notebook.inject import inject
from webhook.platform.notebook.render import InvalidOwner, render

DEFAULT = load_yaml(REPO / "policies" / "notebook-injection.yaml")[0]["spec"]
POD = load_yaml(REPO / "examples" / "notebook-pod.yaml")[0]


def spec_of(**patch: Any) -> NotebookSpec:
    return compile_spec(merge_patch(copy.deepcopy(DEFAULT), patch))


def namespace(owner: str | None, name: str = "jdoe") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/part-of": "kubeflow-profile"}}
    if owner is not None:
        meta["annotations"] = {"owner": owner}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def injected(spec: NotebookSpec, pod: dict[str, Any] = POD, owner: str = "jdoe@example.org") -> dict[str, Any]:
    result = inject(spec, render(spec, profile_info(namespace(owner))), pod)
    assert result.changed and not result.conflicts
    return dict(result.pod)


def by_name(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(i for i in items if i["name"] == name)


def test_the_credentials_reach_the_sidecar_only_and_the_token_is_read_only_for_the_notebook() -> None:
    pod = injected(spec_of())
    sidecar = by_name(pod["spec"]["initContainers"], "oidc-token-refresher")
    notebook = by_name(pod["spec"]["containers"], "analysis")
    assert sidecar["restartPolicy"] == "Always"
    assert {m["name"]: m.get("readOnly", False) for m in sidecar["volumeMounts"]} == {
        "oidc-token": False, "oidc-credentials": True}
    assert [m["name"] for m in notebook["volumeMounts"] if m["name"].startswith("oidc")] == ["oidc-token"]
    assert by_name(notebook["volumeMounts"], "oidc-token")["readOnly"] is True
    assert by_name(pod["spec"]["volumes"], "oidc-token")["emptyDir"]["medium"] == "Memory"
    assert by_name(pod["spec"]["volumes"], "oidc-credentials")["secret"] == {"secretName": "oidc-jdoe"}
    assert sidecar["startupProbe"]["exec"]["command"] == ["test", "-e", "/run/secrets/oidc/.ready"]
    assert sidecar["command"] == ["quartermaster", "token-refresher"]
    assert "--token-file=/run/secrets/oidc/token" in sidecar["args"]
    assert by_name(notebook["env"], "OAUTH2_TOKEN")["value"] == "FILE:/run/secrets/oidc/token"
    assert by_name(notebook["env"], "HOME")["value"] == "/eos/user/j/jdoe"
    assert notebook["workingDir"] == "/home/jovyan"  # Kubeflow's: runc enters it without the token (setWorkingDir)
    assert_valid_k8s(pod)


def test_names_and_paths_come_from_the_yaml() -> None:
    spec = spec_of(home={"volumeName": "user-home", "homeEnv": "", "setWorkingDir": False},
                   tokenRefresher={"token": {"mountPath": "/run/token", "fileName": "access_token", "volumeName": "tok"},
                                   "notebookEnv": [{"name": "OIDC_TOKEN_FILE", "value": "{token_path}"},
                                                   {"name": "PROFILE", "value": "{namespace}"}]})
    pod = injected(spec)
    notebook = pod["spec"]["containers"][0]
    assert [e["name"] for e in notebook["env"]] == ["NB_PREFIX", "OIDC_TOKEN_FILE", "PROFILE"]
    assert by_name(notebook["env"], "OIDC_TOKEN_FILE")["value"] == "/run/token/access_token"
    assert notebook["workingDir"] == "/home/jovyan"
    assert {"tok", "user-home"} <= {m["name"] for m in notebook["volumeMounts"]}
    assert_valid_k8s(pod)


@pytest.mark.parametrize("volume, expected", [
    ({"persistentVolumeClaim": {"claimName": "home-{user}"}}, {"persistentVolumeClaim": {"claimName": "home-john.doe"}}),
    ({"csi": {"driver": "eos.csi.example.org", "volumeAttributes": {"path": "/eos/user/{user_initial}/{user}",
                                                                    "profile": "{namespace}"}}},
     {"csi": {"driver": "eos.csi.example.org", "volumeAttributes": {"path": "/eos/user/j/john.doe", "profile": "ml"}}}),
    ({"nfs": {"server": "home.example.org", "path": "/export/{user}"}},
     {"nfs": {"server": "home.example.org", "path": "/export/john.doe"}}),
])
def test_home_volume_templates(volume: dict[str, Any], expected: dict[str, Any]) -> None:
    spec = compile_spec({**copy.deepcopy(DEFAULT), "home": {**DEFAULT["home"], "volume": volume}})
    result = inject(spec, render(spec, profile_info(namespace("john.doe@example.org", "ml"))), POD)
    assert by_name(result.pod["spec"]["volumes"], "eos") == {"name": "eos", **expected}
    assert_valid_k8s(result.pod)


@pytest.mark.parametrize("owner, words", [
    (None, "has no 'owner' annotation"),
    ("", "has no 'owner' annotation"),
    ("jdoe", "does not name a user"),
    ("@example.org", "does not name a user"),
    ("Jane Doe <jdoe@example.org>", "does not name a user"),
    ("../../etc@example.org", "does not name a user"),
])
def test_unusable_owners(owner: str | None, words: str) -> None:
    with pytest.raises(InvalidOwner) as info:
        render(spec_of(), profile_info(namespace(owner)))
    assert words in str(info.value) and "namespace jdoe" in str(info.value)


def test_a_permissive_user_pattern_still_cannot_make_a_bad_name_or_path() -> None:
    spec = spec_of(owner={"userPattern": ".+"})
    with pytest.raises(InvalidOwner) as info:
        render(spec, profile_info(namespace("J_Doe@example.org")))
    assert "'oidc-J_Doe'" in str(info.value)
    spec = spec_of(owner={"userPattern": ".+"}, tokenRefresher=None)
    with pytest.raises(InvalidOwner) as info:
        render(spec, profile_info(namespace("..@example.org")))
    assert "not an absolute path" in str(info.value)


def test_the_notebook_container_falls_back_to_the_first_one() -> None:
    pod = copy.deepcopy(POD)
    pod["metadata"]["labels"]["notebook-name"] = "renamed"
    pod["spec"]["containers"].insert(0, {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.26.2"})
    out = injected(spec_of(), pod)
    proxy, notebook = out["spec"]["containers"]
    assert proxy == {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.26.2"}
    assert by_name(notebook["env"], "HOME")


def test_a_pod_of_only_other_injectors_containers_is_skipped() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"notebook-name": "p"}},
           "spec": {"containers": [{"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.26.2"}]}}
    result = inject(spec_of(), render(spec_of(), profile_info(namespace("jdoe@example.org"))), pod)
    assert not result.containers and not result.changed and result.pod is pod


VARIANTS = {
    "default": {},
    "plain": {"tokenRefresher": {"sidecar": "Plain"}},
    "relocate": {"home": {"mountPath": "/home/jovyan", "homePath": "/home/jovyan",
                          "workspace": {"action": "Relocate", "relocateTo": "/workspace"}}},
    "all-override": {"containers": {"select": "All"}, "home": {"setWorkingDir": True}, "merge": {"env": "Override", "volumes": "Override",
                                                                "volumeMounts": "Override", "workingDir": "Override"}},
    "keep-everything": {"home": {"setWorkingDir": True}, "merge": {"env": "Keep", "volumes": "Keep", "volumeMounts": "Keep", "workingDir": "Keep"}},
    "token-only": {"home": None},
    "home-only": {"tokenRefresher": None},
}
RESOURCES = sorted(p.parent.name for p in CASES.glob("*/resource.yaml"))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("case", RESOURCES)
def test_injecting_twice_changes_nothing_more(variant: str, case: str) -> None:
    spec = spec_of(**VARIANTS[variant])
    pod = load_yaml(CASES / case / "resource.yaml")[0]
    owner = namespace("jdoe@example.org")
    first = inject(spec, render(spec, profile_info(owner)), pod)
    if first.conflicts or not first.containers:
        assert first.pod is pod and not first.changed
        return
    assert_valid_k8s(first.pod)
    second = inject(spec, render(spec, profile_info(owner)), first.pod)
    assert not second.conflicts and not second.changed
    assert second.pod == first.pod


def test_a_plain_sidecar_without_hold_and_a_secret_mode() -> None:
    spec = spec_of(tokenRefresher={"sidecar": "Plain", "plainSidecarHold": [], "credentials": {"defaultMode": 0o440}})
    pod = injected(spec)
    assert [c["name"] for c in pod["spec"]["containers"]] == ["oidc-token-refresher", "analysis"]
    assert "lifecycle" not in pod["spec"]["containers"][0] and "restartPolicy" not in pod["spec"]["containers"][0]
    assert "initContainers" not in pod["spec"]
    assert pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] == "analysis"
    assert by_name(pod["spec"]["volumes"], "oidc-credentials")["secret"] == {"secretName": "oidc-jdoe", "defaultMode": 0o440}
    assert_valid_k8s(pod)
