"""Render the compiled NotebookInjection spec for one profile owner: the volumes, the sidecar, and the
env and mounts the notebook containers get. Pure: no pod is read here."""

from __future__ import annotations

import posixpath
from typing import Any, Callable, Iterator, Mapping


from webhook.model.jsoncopy import copier
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.base import ProfileInfo
from webhook.platform.notebook.identity import Identity
from webhook.platform.notebook.config import DNS_SUBDOMAIN, HomeSpec, NotebookSpec, RefresherSpec, SidecarMode
from webhook.platform.notebook.merge import normal_path
from webhook.platform.notebook.template import NotebookTemplate

# the placeholders whose values the policy alone decides (_derived): templates using only these render
# the same for every user
POLICY_PLACEHOLDERS = frozenset({"token_path", "token_dir", "credentials_dir", "refresh_margin_seconds"})


class InvalidOwner(Exception):
    """The profile has no usable owner, so there is no home to mount and no credentials to use."""


@frozen_dataclass(dict_init=True)
class Desired:
    volumes: tuple[Mapping[str, Any], ...]  # pod volumes
    sidecar: Mapping[str, Any] | None  # the token refresher container
    env: tuple[Mapping[str, Any], ...]  # for each notebook container
    mounts: tuple[Mapping[str, Any], ...]  # for each notebook container
    home_path: str | None
    user: str


def owner_values(spec: NotebookSpec, profile: ProfileInfo, identity: Identity | None = None) -> dict[str, str]:
    """The template values of the notebook's user: the profile owner, unless another identity is given."""
    if identity is None:
        if not profile.owner:
            raise InvalidOwner(f"namespace {profile.namespace} has no 'owner' annotation, so the notebook's owner "
                               f"(home directory, token credentials) is unknown; ask the platform team to fix the profile")
        user = profile.user
    else:
        user = identity.user
    if not user or not spec.owner.user_pattern.fullmatch(user):
        described = identity.described if identity is not None else \
            f"the owner annotation {profile.owner!r} of namespace {profile.namespace}"  # worded for the error only
        raise InvalidOwner(f"{described} does not name a user (an e-mail whose local part matches "
                           f"{spec.owner.user_pattern.pattern}); ask the platform team to fix the profile")
    return {"user": user, "user_initial": user[:1], "namespace": profile.namespace}


def notebook_uid(default: int, pod: Mapping[str, Any], containers: list[dict[str, Any]]) -> int:
    """The uid the notebook containers run as: the refresher must write the token file as it."""
    pod_uid = ((pod.get("spec") or {}).get("securityContext") or {}).get("runAsUser")
    given = {(c.get("securityContext") or {}).get("runAsUser", pod_uid) for c in containers}
    uids = {default if uid is None else int(uid) for uid in given} or {default}
    if len(uids) > 1:
        raise InvalidOwner(f"the notebook containers run as different uids ({', '.join(map(str, sorted(uids)))}); "
                           f"one token file can belong to only one of them; run them as one uid")
    uid = uids.pop()
    if uid == 0:
        raise InvalidOwner("the notebook runs as root (runAsUser 0); the token refresher runs as the notebook's uid "
                           "and never as root: run the notebook as its image's user (jovyan, 1000)")
    return uid


def render(spec: NotebookSpec, profile: ProfileInfo, identity: Identity | None = None, uid: int | None = None) -> Desired:
    """Raises InvalidOwner when the user is unusable, or makes a name or path Kubernetes would refuse."""
    values = owner_values(spec, profile, identity)
    volumes: list[Mapping[str, Any]] = []
    env: list[Mapping[str, Any]] = []
    mounts: list[Mapping[str, Any]] = []
    sidecar = None
    home_path = None
    if spec.refresher:
        values.update(_derived_once(spec.refresher))
    if spec.home:
        mount_path = _mount_path(spec.home, values, profile)
        home_path = _path(spec.home.home_path.render(values), "home path", profile)
        values["home"] = home_path
        volumes.append(_home_volume(spec.home, values, profile))
        mounts.append(_home_mount(spec.home, mount_path))
        if spec.home.home_env:
            env.append({"name": spec.home.home_env, "value": home_path})
    if spec.refresher:
        r = spec.refresher
        secret_name = _name(r.secret_name.render(values), "credentials Secret name", profile)
        secret: dict[str, Any] = {"secretName": secret_name}
        if r.secret_default_mode is not None:
            secret["defaultMode"] = r.secret_default_mode
        # in memory on purpose: the token must never reach the node's disk
        volumes[:0] = [{"name": r.token_volume, "emptyDir": {"medium": "Memory", "sizeLimit": r.token_size_limit}},
                       {"name": r.credentials_volume, "secret": secret}]
        mounts.insert(0, {"name": r.token_volume, "mountPath": r.token_dir, "readOnly": True})
        env[:0] = _notebook_env(r, values)
        sidecar = _sidecar_for(r, values, r.default_uid if uid is None else uid)
    return Desired(tuple(volumes), sidecar, tuple(env), tuple(mounts), home_path, values["user"])


def _derived_once(r: RefresherSpec) -> dict[str, str]:
    """_derived(r), made once per policy (read only: callers copy it into their own values)."""
    if "derived" not in r.memo:
        r.memo["derived"] = _derived(r)
    derived: dict[str, str] = r.memo["derived"]
    return derived


def _derived(r: RefresherSpec) -> dict[str, str]:
    return {"token_path": r.token_path, "token_dir": r.token_dir, "credentials_dir": r.credentials_dir,
            "refresh_margin_seconds": str(r.refresh_margin_seconds)}


def _mount_path(home: HomeSpec, values: Mapping[str, str], profile: ProfileInfo) -> str:
    """The home's mount path, checked; one without placeholders (the default /eos) is checked once per policy."""
    made = home.memo.get("mount_path")
    if made is not None:
        return made
    path = _path(home.mount_path.render(values), "home mount path", profile)
    if not home.mount_path.names:
        home.memo["mount_path"] = path  # the same for every owner, and it passed
    return path


def _notebook_env(r: RefresherSpec, values: Mapping[str, str]) -> list[dict[str, Any]]:
    """The notebook's env entries; when their values use only what the policy sets (the default policy's
    FILE:{token_path}), rendered once per policy and each pod gets fresh entries of those values."""
    if "notebook_env" not in r.memo:
        same = all(e.value.names <= POLICY_PLACEHOLDERS for e in r.notebook_env)
        r.memo["notebook_env"] = tuple((e.name, e.value.render(_derived(r))) for e in r.notebook_env) if same else None
    rendered = r.memo["notebook_env"]
    if rendered is None:
        return [{"name": e.name, "value": e.value.render(values)} for e in r.notebook_env]
    return [{"name": name, "value": value} for name, value in rendered]


def _home_volume(home: HomeSpec, values: Mapping[str, str], profile: ProfileInfo) -> dict[str, Any]:
    source = home.volume.render(values)
    if home.volume.static and home.memo.get("volume_checked"):
        # no placeholder in it: the same source for every owner, whose path and name passed the checks below
        return {"name": home.volume_name, **source}
    for kind, body in source.items():
        if "path" in body:
            _path(body["path"], f"{kind} path of the home volume", profile)
        if "claimName" in body:
            _name(body["claimName"], "home PersistentVolumeClaim name", profile)
    if home.volume.static:
        home.memo["volume_checked"] = True
    return {"name": home.volume_name, **source}


def _home_mount(home: HomeSpec, path: str) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": home.volume_name, "mountPath": path}
    if home.read_only:
        mount["readOnly"] = True
    if home.mount_propagation:
        mount["mountPropagation"] = home.mount_propagation
    return mount


def _sidecar_templates(r: RefresherSpec) -> Iterator[NotebookTemplate]:
    yield from r.command
    yield from r.args
    yield from (e.value for e in r.env)
    yield from r.startup_probe.command
    yield from r.plain_hold


def _frozen_sidecar(r: RefresherSpec) -> Callable[[], dict[str, Any]] | None:
    """A copier of the sidecar, when nothing in it depends on the user (the default policy: the
    refresher's command line uses only paths the policy sets). None: rendered per request."""
    if not (r.resources.static and r.security_context.static
            and all(t.names <= POLICY_PLACEHOLDERS for t in _sidecar_templates(r))):
        return None
    return copier(_sidecar(r, _derived(r), 0))  # the uid is set per request


def _sidecar_for(r: RefresherSpec, values: Mapping[str, str], uid: int) -> dict[str, Any]:
    """_sidecar(r, values, uid): a copy of the one made once per policy, when it is the same for everyone
    (as TemplateTree.render copies a tree without placeholders)."""
    if "sidecar" not in r.memo:
        r.memo["sidecar"] = _frozen_sidecar(r)
    copy = r.memo["sidecar"]
    if copy is None:
        return _sidecar(r, values, uid)
    container = copy()  # a fresh copy for every pod: the pod's object is never shared
    container["securityContext"]["runAsUser"] = uid  # in the place {**securityContext, "runAsUser": uid} puts it
    return container


def _sidecar(r: RefresherSpec, values: Mapping[str, str], uid: int) -> dict[str, Any]:
    container: dict[str, Any] = {"name": r.name, "image": r.image, "imagePullPolicy": r.image_pull_policy}
    if r.command:
        container["command"] = [t.render(values) for t in r.command]
    if r.args:
        container["args"] = [t.render(values) for t in r.args]
    if r.env:
        container["env"] = [{"name": e.name, "value": e.value.render(values)} for e in r.env]
    resources = r.resources.render(values)
    if resources:
        container["resources"] = resources
    # eosxd accepts the token file only from the uid that reads EOS: the notebook's
    container["securityContext"] = {**r.security_context.render(values), "runAsUser": uid}
    container["volumeMounts"] = [{"name": r.token_volume, "mountPath": r.token_dir},
                                 {"name": r.credentials_volume, "mountPath": r.credentials_dir, "readOnly": True}]
    probe: dict[str, Any] = {"exec": {"command": [t.render(values) for t in r.startup_probe.command]}}
    probe.update((k, v) for k, v in r.startup_probe.timing.items() if v)  # zeros are dropped by the API server
    container["startupProbe"] = probe
    if r.mode is SidecarMode.NATIVE:
        container["restartPolicy"] = "Always"
    elif r.plain_hold:
        # kubelet starts regular containers in order and waits for each postStart hook: the notebook
        # container starts only once the first token is there (Istio's holdApplicationUntilProxyStarts trick)
        container["lifecycle"] = {"postStart": {"exec": {"command": [t.render(values) for t in r.plain_hold]}}}
    return container


def _path(path: str, what: str, profile: ProfileInfo) -> str:
    if normal_path(path):
        return path  # absolute, no '..' in it, and normpath would return it as it is
    if not path.startswith("/") or ".." in path.split("/"):
        raise InvalidOwner(f"the owner {profile.owner!r} of namespace {profile.namespace} gives the {what} {path!r}, "
                           f"which is not an absolute path; ask the platform team to fix the profile")
    return posixpath.normpath(path)


def _name(name: str, what: str, profile: ProfileInfo) -> str:
    if len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        raise InvalidOwner(f"the owner {profile.owner!r} of namespace {profile.namespace} gives the {what} {name!r}, "
                           f"which is not a valid Kubernetes name; ask the platform team to fix the profile")
    return name
