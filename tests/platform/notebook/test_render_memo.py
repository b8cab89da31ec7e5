"""What rendering now makes once per policy gives what rendering it for every pod gave: the notebook's env
entries whose values only the policy sets, the checks of a home volume and mount path without placeholders, the owner's
values (their description worded only for an error), and the volumes a namespace's Pod Security level
forbids (none at privileged)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings, strategies as st

from tests.platform.notebook.test_inject import DEFAULT
from webhook.platform.base import ProfileInfo
from webhook.platform.notebook import render
from webhook.platform.notebook.config import compile_spec
from webhook.platform.notebook.identity import Identity
from webhook.platform.notebook.podsecurity import LEVELS, RESTRICTED_VOLUMES, forbidden_volumes
from webhook.platform.notebook.render import (InvalidOwner, _home_volume, _mount_path, _name, _notebook_env, _path,
                                             owner_values)


# --- the references, as they were ------------------------------------------------------------------------
def _owner_values_reference(spec, profile: ProfileInfo, identity: Identity | None = None) -> dict[str, str]:
    if identity is None:
        if not profile.owner:
            raise InvalidOwner(f"namespace {profile.namespace} has no 'owner' annotation, so the notebook's owner "
                               f"(home directory, token credentials) is unknown; ask the platform team to fix the profile")
        identity = Identity(profile.user, f"the owner annotation {profile.owner!r} of namespace {profile.namespace}")
    user = identity.user
    if not user or not spec.owner.user_pattern.fullmatch(user):
        raise InvalidOwner(f"{identity.described} does not name a user (an e-mail whose local part matches "
                           f"{spec.owner.user_pattern.pattern}); ask the platform team to fix the profile")
    return {"user": user, "user_initial": user[:1], "namespace": profile.namespace}


def _home_volume_reference(home, values, profile: ProfileInfo) -> dict[str, Any]:
    source = home.volume.render(values)
    for kind, body in source.items():
        if "path" in body:
            _path(body["path"], f"{kind} path of the home volume", profile)
        if "claimName" in body:
            _name(body["claimName"], "home PersistentVolumeClaim name", profile)
    return {"name": home.volume_name, **source}


def _forbidden_reference(volumes, level: str) -> list[str]:
    out = []
    for volume in volumes:
        for kind in [k for k in volume if k != "name"]:
            if (level == "baseline" and kind == "hostPath") or (level == "restricted" and kind not in RESTRICTED_VOLUMES):
                out.append(f"{volume.get('name')} ({kind})")
    return out


def _outcome(fn, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        return type(exc), str(exc)


# --- policies and owners -----------------------------------------------------------------------------------
def _spec(notebook_env: list[dict[str, str]], volume: dict[str, Any], pattern: str, mount_path: str = "/eos"):
    raw = copy.deepcopy(DEFAULT)
    raw["home"]["mountPath"] = raw["home"]["homePath"] = mount_path
    raw["tokenRefresher"]["notebookEnv"] = notebook_env
    raw["home"]["volume"] = volume
    raw["owner"]["userPattern"] = pattern
    return compile_spec(raw)


ENV_VALUES = st.sampled_from(["FILE:{token_path}", "{token_dir}/x", "{home}/.token", "{user}", "plain",
                              "{refresh_margin_seconds}s {credentials_dir}", "{namespace}-{user_initial}", ""])
ENVS = st.lists(st.fixed_dictionaries({"name": st.sampled_from(["A", "OAUTH2_TOKEN", "B"]), "value": ENV_VALUES}),
                max_size=3, unique_by=lambda e: e["name"])
VOLUMES = st.sampled_from([
    {"persistentVolumeClaim": {"claimName": "eos"}},
    {"persistentVolumeClaim": {"claimName": "home-{user}"}},
    {"nfs": {"server": "home.example.org", "path": "/export"}},
    {"nfs": {"server": "home.example.org", "path": "/export/{user}"}},
    {"hostPath": {"path": "/eos/../eos//x/"}},
    {"csi": {"driver": "eos.csi.example.org", "volumeAttributes": {"path": "/eos/{user_initial}/{user}"}}},
    {"csi": {"driver": "eos.csi.example.org", "volumeAttributes": {"x": "y"}}},
])
MOUNT_PATHS = st.sampled_from(["/eos", "/eos/{user}", "/a//b/", "/{{x}}", "/eos/.", "/home/{user_initial}/{user}/",
                                "/x/../eos", "eos"])
PATTERNS = st.sampled_from(["^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$", ".*", "^[a-z]+$"])
OWNERS = st.one_of(st.sampled_from(["jdoe@example.org", "", "jdoe", "@example.org", "Jane Doe <j@x.org>", "../x@y.org",
                                    "a..b@example.org", "UPPER@example.org", "x/y@example.org"]),
                   st.text(alphabet="abz./-@ ", max_size=12))
IDENTITIES = st.one_of(st.none(), st.builds(Identity, st.sampled_from(["bob", "", "../x", "Bob", "b.b"]),
                                            st.just("creator bob@example.org of Notebook ml/nb")))


@settings(max_examples=400, deadline=None)
@given(ENVS, VOLUMES, PATTERNS, MOUNT_PATHS, st.lists(st.tuples(OWNERS, IDENTITIES), min_size=1, max_size=4))
def test_rendered_once_as_rendered_for_each_pod(env, volume, pattern, mount_path, owners) -> None:
    try:
        spec = _spec(env, volume, pattern, mount_path)
    except Exception:  # a policy the loader refuses (a placeholder where it is not allowed, a bad static path)
        return
    assert spec.home is not None and spec.refresher is not None
    for owner, identity in owners:  # one policy, many pods: what is made once is made by the first
        profile = ProfileInfo("ml", owner, "personal")
        values = _outcome(owner_values, spec, profile, identity)
        assert values == _outcome(_owner_values_reference, spec, profile, identity)
        if not isinstance(values, dict):
            continue
        values = {**values, **render._derived(spec.refresher), "home": "/eos/user/j/jdoe"}
        for _ in range(2):
            assert _outcome(_mount_path, spec.home, values, profile) == \
                _outcome(lambda: _path(spec.home.mount_path.render(values), "home mount path", profile))
            got = _notebook_env(spec.refresher, values)
            assert got == [{"name": e.name, "value": e.value.render(values)} for e in spec.refresher.notebook_env]
            for entry in got:
                entry["value"] = "edited"  # each pod's entries are its own
            assert _outcome(_home_volume, spec.home, values, profile) == \
                _outcome(_home_volume_reference, spec.home, values, profile)
            made = _outcome(_home_volume, spec.home, values, profile)
            if isinstance(made, dict):
                next(iter(made[next(k for k in made if k != "name")].values()))  # a fresh tree each time
                assert made is not _outcome(_home_volume, spec.home, values, profile)


_VOLUME = st.dictionaries(st.sampled_from(["name", "hostPath", "emptyDir", "nfs", "secret", "csi", "gitRepo"]),
                          st.just({}), max_size=3)


@settings(max_examples=1000, deadline=None)
@given(st.lists(_VOLUME, max_size=4), st.sampled_from(LEVELS))
def test_forbidden_volumes_as_before(volumes: list[dict[str, Any]], level: str) -> None:
    assert forbidden_volumes(volumes, level) == _forbidden_reference(volumes, level)
