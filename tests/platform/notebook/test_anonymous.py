"""`anonymous@kubeflow.org` names nobody: Kubeflow's web apps write it when no user header reached them.

A Notebook created that way (an ingress that drops `kubeflow-userid`, a misconfigured web app) carries it
as its creator; a team notebook pod must then fail closed, never get the home and token of user
`anonymous` (a directory every such notebook would share).
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.platform.notebook.test_cases import CASES, build, mutate
from tests.support import load_yaml
from webhook.platform.notebook.identity import compile_identity

CREATOR = "notebooks.kubeflow.org/creator"


def case_with(tmp_path: Path, creator: str | None = None, owner: str | None = None) -> Path:
    """tests/cases/notebook/team-creator with the Notebook's creator or the profile's owner replaced."""
    case = tmp_path / "case"
    shutil.copytree(CASES / "team-creator", case)
    objects: list[dict[str, Any]] = load_yaml(case / "state.yaml")
    if creator is not None:
        notebook = next(o for o in objects if o["kind"] == "Notebook")
        notebook["metadata"]["annotations"][CREATOR] = creator
    if owner is not None:
        objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "ml-team", "annotations": {"owner": owner},
            "labels": {"app.kubernetes.io/part-of": "kubeflow-profile", "kubernetes.io/metadata.name": "ml-team",
                       "quartermaster.dev/profile-class": "personal"}}})
    (case / "state.yaml").write_text(yaml.safe_dump_all(objects, sort_keys=False))
    (tmp_path / "policies").mkdir()
    return case


async def admit(tmp_path: Path, case: Path) -> Any:
    pod = copy.deepcopy(load_yaml(case / "resource.yaml")[0])
    return (await mutate(build(case, tmp_path / "policies"), pod)).verdict


@pytest.mark.parametrize("creator", ["anonymous@kubeflow.org", " Anonymous@Kubeflow.org "])
async def test_an_anonymous_creator_is_no_creator(tmp_path: Path, creator: str) -> None:
    verdict = await admit(tmp_path, case_with(tmp_path, creator=creator))
    assert not verdict.allowed and verdict.code == 403
    assert "cannot be determined" in verdict.message and "no user header" in verdict.message
    assert not verdict.patch  # no home /eos/user/a/anonymous, no token of user anonymous


async def test_an_anonymous_profile_owner_is_no_owner(tmp_path: Path) -> None:
    verdict = await admit(tmp_path, case_with(tmp_path, owner="anonymous@kubeflow.org"))
    assert not verdict.allowed and verdict.code == 403
    assert "nobody authenticated" in verdict.message and not verdict.patch


async def test_a_real_creator_still_gets_their_home(tmp_path: Path) -> None:
    verdict = await admit(tmp_path, case_with(tmp_path, creator="bob@example.org"))
    assert verdict.allowed and any("/eos/user/b/bob" in str(op.get("value")) for op in verdict.patch)


def test_the_platform_names_its_own_anonymous_users() -> None:
    assert compile_identity({}).anonymous == frozenset({"anonymous@kubeflow.org"})
    assert compile_identity({"anonymousUsers": ["Nobody@Example.org"]}).anonymous == frozenset({"nobody@example.org"})
