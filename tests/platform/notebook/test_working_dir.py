"""The notebook container's workingDir stays Kubeflow's by default (spec.home.setWorkingDir: false).

runc enters the working directory while it sets the container up, before the notebook's process exists:
the process eosxd sees then has no OAUTH2_TOKEN in its environment, so a workingDir on EOS can be
refused (CreateContainerError: chdir ... permission denied). Kubeflow's images `cd "$HOME"` in their
start script, once the process has the token, so HOME alone puts the user in their EOS home.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.platform.notebook.test_cases import CASES, build, mutate
from tests.platform.notebook.test_policy import DEFAULT, load, variant
from tests.support import apply_patch, assert_valid_k8s, load_yaml
from webhook.platform.notebook.policy import NotebookInjection

POD = load_yaml(CASES / "kubeflow-notebook" / "resource.yaml")[0]


def notebook_container(pod: dict[str, Any]) -> dict[str, Any]:
    name = pod["metadata"]["labels"]["notebook-name"]
    return next(c for c in pod["spec"]["containers"] if c["name"] == name)


async def injected(tmp_path: Path, home_patch: dict[str, Any] | None) -> dict[str, Any]:
    """The pod the API server gets back from /mutate, for a notebook pod in profile jdoe."""
    case = tmp_path / "case"
    case.mkdir()
    (case / "resource.yaml").write_text((CASES / "kubeflow-notebook" / "resource.yaml").read_text())
    if home_patch is not None:
        (case / "overrides.yaml").write_text(yaml.safe_dump({"spec": {"home": home_patch}}))
    (tmp_path / "policies").mkdir()
    result = await mutate(build(case, tmp_path / "policies"), POD)
    assert result.verdict.allowed, result.verdict.message
    pod = apply_patch(POD, list(result.verdict.patch))
    assert_valid_k8s(pod)
    return pod


@pytest.mark.parametrize("home_patch", [None, {"setWorkingDir": None}], ids=["shipped policy", "field left out"])
async def test_runc_never_enters_the_eos_home(tmp_path: Path, home_patch: dict[str, Any] | None) -> None:
    notebook = notebook_container(await injected(tmp_path, home_patch))
    home = next(e["value"] for e in notebook["env"] if e["name"] == "HOME")
    eos = next(m["mountPath"] for m in notebook["volumeMounts"] if m["name"] == "eos")
    assert home == "/eos/user/j/jdoe"  # the start script's cd "$HOME" gets there, with the token
    assert notebook["workingDir"] == notebook_container(POD)["workingDir"] == "/home/jovyan"
    assert posixpath.commonpath([notebook["workingDir"], eos]) != eos


async def test_set_working_dir_is_an_opt_in(tmp_path: Path) -> None:
    notebook = notebook_container(await injected(tmp_path, {"setWorkingDir": True}))
    assert notebook["workingDir"] == "/eos/user/j/jdoe"


def test_the_compiled_default_is_false(tmp_path: Path) -> None:
    policy = load(tmp_path, variant(home__setWorkingDir=None))
    assert isinstance(policy, NotebookInjection) and policy.spec.home is not None
    assert policy.spec.home.set_working_dir is False
    assert DEFAULT["spec"]["home"]["setWorkingDir"] is False
