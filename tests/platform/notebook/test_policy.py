"""Loading NotebookInjection policies: the shipped default, strict schema, compile-time checks."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO, load_yaml
from webhook.app import build_registry
from webhook.cel import CelCompiler
from webhook.model.errors import PolicyLoadError
from webhook.model.policy import FailurePolicy, Phase
from webhook.model.results import Action
from webhook.platform.notebook.config import SidecarMode, MergeStrategy
from webhook.platform.notebook.policy import NotebookInjection
from webhook.policy.family import FamilyRegistry
from webhook.policy.loader import PolicyLoader

DEFAULT = load_yaml(REPO / "policies" / "notebook-injection.yaml")[0]


def load(tmp_path: Path, doc: Any, registry: FamilyRegistry | None = None) -> NotebookInjection | PolicyLoadError:
    path = tmp_path / "policy.yaml"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False))
    result = PolicyLoader(registry or build_registry(), CelCompiler()).load(path)
    if result.errors:
        assert len(result.errors) == 1, result.errors
        return result.errors[0]
    (policy,) = result.policies
    assert isinstance(policy, NotebookInjection)
    return policy


def variant(**spec: Any) -> dict[str, Any]:
    doc = copy.deepcopy(DEFAULT)
    for key, value in spec.items():
        target = doc["spec"]
        *parents, last = key.split("__")
        for parent in parents:
            target = target.setdefault(parent, {})
        if value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return doc


def error(tmp_path: Path, doc: Any) -> PolicyLoadError:
    outcome = load(tmp_path, doc)
    assert isinstance(outcome, PolicyLoadError), f"expected a load error, got {outcome}"
    return outcome


def test_the_default_policy_loads_with_the_registered_kinds(tmp_path: Path) -> None:
    policy = load(tmp_path, DEFAULT, build_registry())
    assert isinstance(policy, NotebookInjection)
    assert policy.phases == {Phase.MUTATE, Phase.VALIDATE} and policy.failure_policy is FailurePolicy.FAIL
    assert policy.action is Action.ENFORCE
    assert policy.match.kinds == {"Pod"} and policy.match.operations == {"CREATE"}
    assert policy.match.namespace_selector.matches({"app.kubernetes.io/part-of": "kubeflow-profile"})
    assert not policy.match.namespace_selector.matches({"kubernetes.io/metadata.name": "default"})
    assert policy.match.object_selector.matches({"notebook-name": "analysis"})
    assert not policy.match.object_selector.matches({"app": "batch"})
    spec = policy.spec
    assert spec.refresher and spec.refresher.mode is SidecarMode.NATIVE
    assert spec.refresher.token_path == "/run/secrets/oidc/token"
    assert spec.merge.env is MergeStrategy.KEEP and spec.merge.volumes is MergeStrategy.REJECT
    assert spec.home and spec.home.workspace_path == "/home/jovyan" and spec.home.relocate_workspace_to is None


def test_a_minimal_policy_gets_the_documented_defaults(tmp_path: Path) -> None:
    doc = {"apiVersion": "quartermaster.dev/v1alpha1", "kind": "NotebookInjection", "metadata": {"name": "tokens"},
           "spec": {"tokenRefresher": {"image": "registry.example.org/r:2.1", "credentials": {"secretName": "oidc-{user}"}}}}
    policy = load(tmp_path, doc)
    assert isinstance(policy, NotebookInjection)
    r = policy.spec.refresher
    assert r is not None and policy.spec.home is None
    assert (r.name, r.token_volume, r.credentials_volume) == ("oidc-token-refresher", "oidc-token", "oidc-credentials")
    assert [e.name for e in r.notebook_env] == ["OAUTH2_TOKEN"]
    assert policy.spec.containers.notebook_label == "notebook-name"
    assert policy.match.object_selector.matches({"notebook-name": "x"})
    assert not policy.match.object_selector.matches({})
    assert policy.match.namespace_selector.matches({"app.kubernetes.io/part-of": "kubeflow-profile"})


def test_an_object_selector_in_the_yaml_replaces_the_default(tmp_path: Path) -> None:
    policy = load(tmp_path, variant(objectSelector={"matchLabels": {"example.org/notebook": "true"}}))
    assert isinstance(policy, NotebookInjection)
    assert policy.match.object_selector.matches({"example.org/notebook": "true"})
    assert not policy.match.object_selector.matches({"notebook-name": "analysis"})


@pytest.mark.parametrize("key, value, field, words", [
    ("home__mountPath", "/eos/user/{usr}", "spec.home.mountPath", "unknown placeholder {usr}"),
    ("home__volume", {"hostPath": {"path": "/eos/{user_initial}/{user}/{project}"}}, "spec.home.volume.hostPath.path",
     "unknown placeholder {project}"),
    ("tokenRefresher__credentials__secretName", "oidc-{token_path}", "spec.tokenRefresher.credentials.secretName",
     "unknown placeholder {token_path}"),
    ("tokenRefresher__args", ["--token={token_path}", "--user={user!r}"], "spec.tokenRefresher.args[1]", "no format"),
    ("tokenRefresher__args", ["--json={\"a\": 1}"], "spec.tokenRefresher.args[0]", "unknown placeholder"),
    ("tokenRefresher__notebookEnv", [{"name": "X", "value": "{oops"}], "spec.tokenRefresher.notebookEnv[0].value", "literal brace"),
    ("tokenRefresher__image", "registry.example.org/platform/oidc-token-refresher", "spec.tokenRefresher.image", "pin the image"),
    ("tokenRefresher__image", "registry.example.org:5000/oidc-token-refresher:latest", "spec.tokenRefresher.image", "pin the image"),
    ("tokenRefresher__resources", {"requests": {"memory": "32MB"}}, "spec.tokenRefresher.resources.requests.memory",
     "not a Kubernetes quantity"),
    ("tokenRefresher__token__sizeLimit", "lots", "spec.tokenRefresher.token.sizeLimit", "not a Kubernetes quantity"),
    ("owner__userPattern", "^[a-z", "spec.owner.userPattern", "not a regular expression"),
    ("home__workspace", {"action": "Relocate"}, "spec.home.workspace.relocateTo", "needs relocateTo"),
    ("home__workspace", {"action": "Relocate", "relocateTo": "/home/jovyan/"}, "spec.home.workspace.relocateTo", "must differ"),
    ("home__mountPath", "eos/{user}", "spec.home.mountPath", "absolute path"),
    ("tokenRefresher__credentials__secretName", "OIDC_{user}", "spec.tokenRefresher.credentials.secretName",
     "Kubernetes object name"),
    ("tokenRefresher__token__volumeName", "eos", "spec.tokenRefresher.token.volumeName", "spec.home.volumeName"),
    ("tokenRefresher__name", "istio-proxy", "spec.tokenRefresher.name", "spec.containers.ignore"),
    ("tokenRefresher__notebookEnv", [{"name": "HOME", "value": "{home}"}], "spec.tokenRefresher.notebookEnv",
     "spec.home.homeEnv"),
    ("tokenRefresher__notebookEnv", [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
     "spec.tokenRefresher.notebookEnv[1].name", "listed twice"),
    # no pod but a notebook's refresher may read what it renders to: placeholders alone would name every Secret
    ("tokenRefresher__credentials__secretName", "{user}", "spec.tokenRefresher.credentials.secretName",
     "needs a fixed part"),
])
def test_compile_errors_name_the_field(tmp_path: Path, key: str, value: Any, field: str, words: str) -> None:
    err = error(tmp_path, variant(**{key: value}))
    assert err.field == field, err
    assert words in err.message, err
    assert err.line is not None and err.file == "policy.yaml"


def test_home_placeholder_needs_a_home(tmp_path: Path) -> None:
    err = error(tmp_path, variant(home=None, tokenRefresher__args=["--home={home}"]))
    assert err.field == "spec.tokenRefresher.args[0]" and "unknown placeholder {home}" in err.message


def test_a_policy_that_injects_nothing_is_refused(tmp_path: Path) -> None:
    err = error(tmp_path, variant(home=None, tokenRefresher=None))
    assert err.field == "spec" and "nothing to inject" in err.message


@pytest.mark.parametrize("key, value, field", [
    ("tokenRefresher__sidecar", "Sidecar", "spec.tokenRefresher.sidecar"),
    ("merge__env", "Merge", "spec.merge.env"),
    ("home__volume", {"hostPath": {"path": "/a"}, "persistentVolumeClaim": {"claimName": "b"}}, "spec.home.volume"),
    ("home__volume", {"emptyDir": {}}, "spec.home.volume.emptyDir"),
    ("tokenRefresher__token__mountPath", "var/run", "spec.tokenRefresher.token.mountPath"),
    ("tokenRefresher__securityContext", {"privileged": True}, "spec.tokenRefresher.securityContext.privileged"),
    ("tokenRefresher__startupProbe", {"periodSeconds": 0}, "spec.tokenRefresher.startupProbe.periodSeconds"),
    ("owner__onInvalid", "Allow", "spec.owner.onInvalid"),
    ("identity__podCreators", [], "spec.identity.podCreators"),  # no pod would ever get an identity
    ("identity__notebookControllers", "system:serviceaccount:kubeflow:nc", "spec.identity.notebookControllers"),
    ("identity__notebookWebApps", [""], "spec.identity.notebookWebApps[0]"),
    ("home__volumeName", "EOS_home", "spec.home.volumeName"),
])
def test_the_schema_is_strict(tmp_path: Path, key: str, value: Any, field: str) -> None:
    err = error(tmp_path, variant(**{key: value}))
    assert err.field == field, err
    assert err.line is not None


def test_an_unknown_field_is_refused_with_its_line(tmp_path: Path) -> None:
    text = (REPO / "policies" / "notebook-injection.yaml").read_text().replace(
        "    refreshMarginSeconds: 300\n", "    refreshMarginSeconds: 300\n    refreshMargn: 5m\n")
    err = error(tmp_path, text)
    assert err.field == "spec.tokenRefresher.refreshMargn"
    assert "allowed fields" in err.message and "refreshMarginSeconds" in err.message
    assert text.splitlines()[err.line - 1].strip() == "refreshMargn: 5m"
