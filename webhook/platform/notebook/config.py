"""The compiled NotebookInjection spec: frozen settings with defaults, checked once at load time."""

from __future__ import annotations

import posixpath
import re
from dataclasses import field
from enum import Enum
from typing import Any, Mapping

from webhook.model.errors import PolicyCompileError
from webhook.model.quantity import parse_quantity
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.notebook.identity import IdentitySpec, compile_identity
from webhook.platform.notebook.template import (DERIVED_PLACEHOLDERS, OWNER_PLACEHOLDERS, NotebookTemplate, TemplateTree,
                                                compile_template, compile_tree, name_pattern)

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Rendered once at compile time, so a template that cannot produce a valid name or path is refused at load.
SAMPLE_OWNER = {"user": "jdoe", "user_initial": "j", "namespace": "jdoe"}

DEFAULT_USER_PATTERN = r"^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$"
DEFAULT_IGNORED = ("istio-proxy", "istio-init", "istio-validation")
DEFAULT_PROBE_COMMAND = ("test", "-e", "{token_dir}/.ready")  # kept by `quartermaster token-refresher`
DEFAULT_PLAIN_HOLD = ("/bin/sh", "-c", "until test -s {token_path}; do sleep 1; done")
DEFAULT_NOTEBOOK_UID = 1000  # jovyan in Kubeflow's notebook images
DEFAULT_NOTEBOOK_ENV = ({"name": "OAUTH2_TOKEN", "value": "FILE:{token_path}"},)
# eosxd reads the token from the notebook's filesystem opening every path component with O_NOFOLLOW (EOS
# fusex SecurityChecker), so a symlink anywhere on the path hides the token. Ubuntu-based images (Kubeflow's
# notebooks) make these symlinks to /run.
DEFAULT_TOKEN_DIR = "/run/secrets/oidc"
SYMLINKED_PREFIXES = ("/var/run", "/var/lock")


class MergeStrategy(str, Enum):
    """What to do when the pod already has an item of the same name with different content."""

    KEEP = "Keep"
    OVERRIDE = "Override"
    REJECT = "Reject"


class SidecarMode(str, Enum):
    NATIVE = "Native"  # an init container with restartPolicy Always (GA in Kubernetes 1.33)
    PLAIN = "Plain"  # a regular container, for clusters without native sidecars


@frozen_dataclass
class OwnerRule:
    user_pattern: re.Pattern[str]
    deny_invalid: bool  # False: skip the injection and let the pod through


@frozen_dataclass
class ContainerRule:
    notebook_label: str
    all_containers: bool  # False: only the container named like the notebook (Kubeflow's convention)
    ignore: frozenset[str]  # other injectors' containers, never touched


@frozen_dataclass
class MergeRules:
    env: MergeStrategy
    volumes: MergeStrategy
    volume_mounts: MergeStrategy
    working_dir: MergeStrategy


@frozen_dataclass
class HomeSpec:
    volume_name: str
    volume: TemplateTree  # the volume source, e.g. {"persistentVolumeClaim": {"claimName": ...}}
    mount_path: NotebookTemplate
    home_path: NotebookTemplate  # HOME and workingDir: the mount path, or a directory below it (EOS mounted at /eos)
    mount_propagation: str | None
    read_only: bool
    home_env: str  # "" leaves HOME alone
    set_working_dir: bool
    workspace_path: str  # where Kubeflow mounts the workspace PVC (and sets workingDir)
    relocate_workspace_to: str | None  # None: leave the workspace mount where it is
    # what rendering derives from this spec alone, computed on first use (render.py): lives and dies with the policy
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@frozen_dataclass
class EnvTemplate:
    name: str
    value: NotebookTemplate


@frozen_dataclass
class ProbeSpec:
    command: tuple[NotebookTemplate, ...]
    timing: Mapping[str, int]  # initialDelaySeconds, periodSeconds, timeoutSeconds, failureThreshold


@frozen_dataclass
class RefresherSpec:
    mode: SidecarMode
    name: str
    image: str
    image_pull_policy: str
    command: tuple[NotebookTemplate, ...]
    args: tuple[NotebookTemplate, ...]
    env: tuple[EnvTemplate, ...]
    refresh_margin_seconds: int
    default_uid: int  # when neither the notebook container nor the pod sets runAsUser
    resources: TemplateTree
    security_context: TemplateTree
    startup_probe: ProbeSpec
    token_volume: str
    token_dir: str
    token_file: str
    token_size_limit: str
    credentials_volume: str
    secret_name: NotebookTemplate
    secret_pattern: re.Pattern[str]  # every name secret_name can render to: no other pod may read these
    credentials_dir: str
    secret_default_mode: int | None
    notebook_env: tuple[EnvTemplate, ...]
    plain_hold: tuple[NotebookTemplate, ...]
    # what rendering derives from this spec alone, computed on first use (render.py): lives and dies with the policy
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def token_path(self) -> str:
        return posixpath.join(self.token_dir, self.token_file)


@frozen_dataclass
class NotebookSpec:
    owner: OwnerRule
    identity: IdentitySpec
    default_pod_security: str  # the level of a namespace without pod-security.kubernetes.io/enforce
    containers: ContainerRule
    merge: MergeRules
    home: HomeSpec | None
    refresher: RefresherSpec | None


def compile_spec(spec: Mapping[str, Any]) -> NotebookSpec:
    if "home" not in spec and "tokenRefresher" not in spec:
        raise PolicyCompileError("spec", "set home, tokenRefresher or both: there is nothing to inject")
    home = _home(spec["home"]) if "home" in spec else None
    refresher = _refresher(spec["tokenRefresher"], home) if "tokenRefresher" in spec else None
    containers = _containers(spec.get("containers") or {})
    if refresher and refresher.name in containers.ignore:
        raise PolicyCompileError("spec.tokenRefresher.name", f"{refresher.name!r} is listed in spec.containers.ignore")
    _check_distinct(home, refresher)
    return NotebookSpec(_owner(spec.get("owner") or {}), compile_identity(spec.get("identity") or {}),
                        (spec.get("podSecurity") or {}).get("defaultLevel", "privileged"), containers,
                        _merge(spec.get("merge") or {}), home, refresher)


def _owner(raw: Mapping[str, Any]) -> OwnerRule:
    text = raw.get("userPattern", DEFAULT_USER_PATTERN)
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise PolicyCompileError("spec.owner.userPattern", f"not a regular expression: {exc}") from None
    return OwnerRule(pattern, raw.get("onInvalid", "Deny") == "Deny")


def _containers(raw: Mapping[str, Any]) -> ContainerRule:
    return ContainerRule(raw.get("notebookLabel", "notebook-name"), raw.get("select", "NotebookName") == "All",
                         frozenset(raw.get("ignore", DEFAULT_IGNORED)))


def _merge(raw: Mapping[str, Any]) -> MergeRules:
    return MergeRules(MergeStrategy(raw.get("env", "Keep")), MergeStrategy(raw.get("volumes", "Reject")),
                      MergeStrategy(raw.get("volumeMounts", "Reject")), MergeStrategy(raw.get("workingDir", "Keep")))


def _home(raw: Mapping[str, Any]) -> HomeSpec:
    volume = compile_tree(raw["volume"], "spec.home.volume", OWNER_PLACEHOLDERS)
    mount_path = compile_template(raw["mountPath"], "spec.home.mountPath", OWNER_PLACEHOLDERS)
    _check_path(mount_path.render(SAMPLE_OWNER), "spec.home.mountPath")
    home_path = compile_template(raw.get("homePath", raw["mountPath"]), "spec.home.homePath", OWNER_PLACEHOLDERS)
    _check_path(home_path.render(SAMPLE_OWNER), "spec.home.homePath")
    if not _below(home_path.render(SAMPLE_OWNER), mount_path.render(SAMPLE_OWNER)):
        raise PolicyCompileError("spec.home.homePath", "must be spec.home.mountPath or a directory below it")
    sample = volume.render(SAMPLE_OWNER)
    for source, key, check in (("hostPath", "path", _check_path), ("nfs", "path", _check_path),
                               ("persistentVolumeClaim", "claimName", _check_name)):
        if source in sample:
            check(sample[source][key], f"spec.home.volume.{source}.{key}")
    workspace = raw.get("workspace") or {}
    workspace_path = workspace.get("mountPath", "/home/jovyan")
    relocate = None
    if workspace.get("action", "Leave") == "Relocate":
        relocate = workspace.get("relocateTo")
        if not relocate:
            raise PolicyCompileError("spec.home.workspace.relocateTo", "action Relocate needs relocateTo, a path")
        if posixpath.normpath(relocate) == posixpath.normpath(workspace_path):
            raise PolicyCompileError("spec.home.workspace.relocateTo", "must differ from spec.home.workspace.mountPath")
    return HomeSpec(raw.get("volumeName", "home"), volume, mount_path, home_path, raw.get("mountPropagation"),
                    bool(raw.get("readOnly", False)), raw.get("homeEnv", "HOME"), bool(raw.get("setWorkingDir", False)),
                    workspace_path, relocate)


def _refresher(raw: Mapping[str, Any], home: HomeSpec | None) -> RefresherSpec:
    derived = OWNER_PLACEHOLDERS | DERIVED_PLACEHOLDERS
    if home is None:
        derived = derived - {"home"}  # nothing to point at
    field = "spec.tokenRefresher"
    image = raw["image"]
    _check_image(image, f"{field}.image")
    token = raw.get("token") or {}
    creds = raw["credentials"]
    secret_name = compile_template(creds["secretName"], f"{field}.credentials.secretName", OWNER_PLACEHOLDERS)
    _check_name(secret_name.render(SAMPLE_OWNER), f"{field}.credentials.secretName")
    size_limit = str(token.get("sizeLimit", "1Mi"))
    _check_quantity(size_limit, f"{field}.token.sizeLimit")
    resources = _container_checks(raw, field)
    return RefresherSpec(
        mode=SidecarMode(raw.get("sidecar", "Native")),
        name=raw.get("name", "oidc-token-refresher"),
        image=image,
        image_pull_policy=raw.get("imagePullPolicy", "IfNotPresent"),
        command=_templates(raw.get("command", ()), f"{field}.command", derived),
        args=_templates(raw.get("args", ()), f"{field}.args", derived),
        env=_env(raw.get("env", ()), f"{field}.env", derived),
        refresh_margin_seconds=int(raw.get("refreshMarginSeconds", 300)),
        default_uid=int(raw.get("defaultNotebookUid", DEFAULT_NOTEBOOK_UID)),
        resources=compile_tree({k: {n: str(v) for n, v in q.items()} for k, q in resources.items()},
                               f"{field}.resources", frozenset()),
        security_context=compile_tree(raw.get("securityContext") or {}, f"{field}.securityContext", frozenset()),
        startup_probe=_probe(raw.get("startupProbe") or {}, f"{field}.startupProbe", derived),
        token_volume=token.get("volumeName", "oidc-token"),
        token_dir=_token_dir(token.get("mountPath", DEFAULT_TOKEN_DIR), f"{field}.token.mountPath"),
        token_file=token.get("fileName", "token"),
        token_size_limit=size_limit,
        credentials_volume=creds.get("volumeName", "oidc-credentials"),
        secret_name=secret_name,
        secret_pattern=name_pattern(secret_name),
        credentials_dir=posixpath.normpath(creds.get("mountPath", "/etc/oidc-credentials")),
        secret_default_mode=creds.get("defaultMode"),
        notebook_env=_env(raw.get("notebookEnv", DEFAULT_NOTEBOOK_ENV), f"{field}.notebookEnv", derived),
        plain_hold=_templates(raw.get("plainSidecarHold", DEFAULT_PLAIN_HOLD), f"{field}.plainSidecarHold", derived),
    )


def _container_checks(raw: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    """The refresher container's resources (returned once checked) and security context."""
    resources = raw.get("resources") or {}
    for part in ("requests", "limits"):
        for name, value in (resources.get(part) or {}).items():
            _check_quantity(value, f"{field}.resources.{part}.{name}")
    if "runAsUser" in (raw.get("securityContext") or {}):
        raise PolicyCompileError(f"{field}.securityContext.runAsUser",
                                 "the refresher runs as the notebook's uid (eosxd needs the token file owned by it); "
                                 "set defaultNotebookUid for pods that do not say")
    return resources


def _probe(probe: Mapping[str, Any], field: str, derived: frozenset[str]) -> ProbeSpec:
    return ProbeSpec(
        _templates(probe.get("command", DEFAULT_PROBE_COMMAND), f"{field}.command", derived),
        {k: int(probe.get(k, d)) for k, d in (("initialDelaySeconds", 0), ("periodSeconds", 2),
                                              ("timeoutSeconds", 1), ("failureThreshold", 30))})


def _templates(items: Any, field: str, allowed: frozenset[str]) -> tuple[NotebookTemplate, ...]:
    return tuple(compile_template(text, f"{field}[{i}]", allowed) for i, text in enumerate(items))


def _env(items: Any, field: str, allowed: frozenset[str]) -> tuple[EnvTemplate, ...]:
    seen: set[str] = set()
    out = []
    for i, item in enumerate(items):
        if item["name"] in seen:
            raise PolicyCompileError(f"{field}[{i}].name", f"{item['name']} is listed twice")
        seen.add(item["name"])
        out.append(EnvTemplate(item["name"], compile_template(item["value"], f"{field}[{i}].value", allowed)))
    return tuple(out)


def _check_distinct(home: HomeSpec | None, refresher: RefresherSpec | None) -> None:
    """Two injected items of the same name would conflict with each other on every pod."""
    if home and refresher:
        for where, name in (("token.volumeName", refresher.token_volume),
                            ("credentials.volumeName", refresher.credentials_volume)):
            if name == home.volume_name:
                raise PolicyCompileError(f"spec.tokenRefresher.{where}", f"{name!r} is also spec.home.volumeName")
        if posixpath.normpath(home.mount_path.render(SAMPLE_OWNER)) == refresher.token_dir:
            raise PolicyCompileError("spec.tokenRefresher.token.mountPath", "is also spec.home.mountPath")
        if home.home_env and home.home_env in {e.name for e in refresher.notebook_env}:
            raise PolicyCompileError("spec.tokenRefresher.notebookEnv", f"{home.home_env} is also spec.home.homeEnv")
    if refresher:
        if refresher.token_volume == refresher.credentials_volume:
            raise PolicyCompileError("spec.tokenRefresher.credentials.volumeName", "is also token.volumeName")
        if refresher.token_dir == refresher.credentials_dir:
            raise PolicyCompileError("spec.tokenRefresher.credentials.mountPath", "is also token.mountPath")


def _below(path: str, parent: str) -> bool:
    path, parent = posixpath.normpath(path), posixpath.normpath(parent)
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _check_path(path: str, field: str) -> None:
    if not path.startswith("/") or ".." in path.split("/"):
        raise PolicyCompileError(field, f"must render to an absolute path without '..', got {path!r}")


def _token_dir(path: str, field: str) -> str:
    _check_path(path, field)
    normal = posixpath.normpath(path)
    for prefix in SYMLINKED_PREFIXES:
        if _below(normal, prefix):
            raise PolicyCompileError(field, f"{path!r} is under {prefix}, a symlink in Ubuntu-based notebook images: "
                                            f"eosxd does not follow symlinks and would never find the token; "
                                            f"use a path without symlinks, such as {DEFAULT_TOKEN_DIR}")
    return normal


def _check_name(name: str, field: str) -> None:
    if len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        raise PolicyCompileError(field, f"must render to a Kubernetes object name (lower case, digits, '-', '.'), "
                                        f"got {name!r}")


def _check_quantity(value: Any, field: str) -> None:
    try:
        parse_quantity(value)
    except ValueError as exc:
        raise PolicyCompileError(field, str(exc)) from None


def _check_image(image: str, field: str) -> None:
    """Pinned images only: a moving tag changes the sidecar of every notebook behind the platform's back."""
    if "@" in image:
        return
    name = image.rsplit("/", 1)[-1]
    tag = name.split(":", 1)[1] if ":" in name else ""
    if not tag or tag == "latest":
        raise PolicyCompileError(field, f"pin the image to a version tag or a digest (name:1.0 or name@sha256:...), "
                                        f"got {image!r}")
