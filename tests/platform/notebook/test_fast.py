"""The notebook injection's shortcuts give what the general path gives: mounts matched against a policy
path in normal form, and the credential checks that skip env lists and volumes that cannot read a Secret."""

from __future__ import annotations

import copy
import posixpath
from typing import Any

from hypothesis import given, settings, strategies as st

from webhook.platform.notebook import credentials, merge
from webhook.platform.notebook.config import MergeStrategy
from webhook.platform.notebook.credentials import credential_conflicts
from webhook.platform.notebook.merge import Conflict, MergeLog, merge_mount, place_mount, same_path

PATHS = st.one_of(st.sampled_from(["/eos", "/eos/", "//eos", "/eos/.", "/eos/..", "/a/../eos", "/./eos", "eos", "/",
                                   "/home/jovyan", "/home//jovyan", "/home/jovyan/", "/run/secrets/oidc", ""]),
                  st.text(alphabet="/.ab", max_size=8), st.integers(), st.none())
NORMAL = st.sampled_from(["/eos", "/home/jovyan", "/run/secrets/oidc", "/a/.b", "/a/..b", "/x", "/a", "/a/b", "/eos/a"])


@settings(max_examples=3000, deadline=None)
@given(st.one_of(PATHS, st.text(alphabet="/.abeos", max_size=12)), NORMAL)
def test_a_path_the_same_as_a_normal_one_holds_its_last_component(path: Any, normal: str) -> None:
    """What merge_mount's search rests on."""
    assert merge.normal_path(normal) and posixpath.normpath(normal) == normal
    if isinstance(path, str) and same_path(path, normal):
        assert normal.rpartition("/")[2] in path


def _merge_mount_reference(container, desired, strategy, setting, log) -> None:
    """merge_mount as it was: same_path against the desired path for every mount."""
    mounts = container.get("volumeMounts") or []
    clashes = [i for i, m in enumerate(mounts)
               if m.get("name") == desired["name"] or same_path(m.get("mountPath"), desired["mountPath"])]
    place_mount(container, mounts, clashes, desired, strategy, setting, log)  # the clashes are what is compared


_MOUNT = st.fixed_dictionaries({"name": st.sampled_from(["eos", "home", "oidc-token", "x"]),
                                "mountPath": st.one_of(PATHS, st.text(alphabet="/.abeos", max_size=10))},
                               optional={"readOnly": st.booleans()})


@settings(max_examples=750, deadline=None)
@given(st.lists(_MOUNT, max_size=5), st.sampled_from(["eos", "y"]),
       st.one_of(NORMAL, PATHS.filter(lambda p: isinstance(p, str)), st.text(alphabet="/.abeos", max_size=8)),
       st.sampled_from(list(MergeStrategy)))
def test_merge_mount_as_before(mounts: list[dict[str, Any]], name: str, path: str, strategy: MergeStrategy) -> None:
    desired = {"name": name, "mountPath": path}
    containers = [{"name": "nb", "volumeMounts": copy.deepcopy(mounts)} for _ in range(2)]
    logs = [MergeLog(), MergeLog()]
    merge_mount(containers[0], desired, strategy, "spec.merge.volumeMounts", logs[0])
    _merge_mount_reference(containers[1], desired, strategy, "spec.merge.volumeMounts", logs[1])
    assert containers[0] == containers[1] and logs[0] == logs[1]


def _containers_reference(pod_spec):
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in pod_spec.get(key) or []:
            if credentials.is_mapping(container):
                yield key, container


def _reads_secret_volume_reference(volume, secret) -> bool:
    if (volume.get("secret") or {}).get("secretName") == secret:
        return True
    sources = (volume.get("projected") or {}).get("sources") or []
    return any(credentials.is_mapping(s) and (s.get("secret") or {}).get("name") == secret for s in sources)


def _conflicts_reference(pod_spec, refresher, refresher_list, credentials_volume, secret) -> list[Conflict]:
    """credential_conflicts as it was: every container through a generator, every env list and volume walked,
    every projected source asked for its secret."""
    conflicts = []
    for key, container in _containers_reference(pod_spec):
        name = container.get("name")
        if key == refresher_list and name == refresher["name"]:
            continue
        mounts = [m for m in container.get("volumeMounts") or [] if credentials.is_mapping(m)]
        if any(m.get("name") == credentials_volume for m in mounts):
            conflicts.append(Conflict(f"container {name!r} in spec.{key} mounts the credentials volume "
                                      f"{credentials_volume!r}, which only the token refresher may", mounts,
                                      "no such mount", credentials.SETTING))
        if credentials._env_reads_secret(container, secret):
            conflicts.append(Conflict(f"container {name!r} in spec.{key} reads the credentials Secret {secret!r} "
                                      "through env or envFrom", container.get("env") or container.get("envFrom"),
                                      "no such reference", credentials.SETTING))
    for volume in pod_spec.get("volumes") or []:
        if credentials.is_mapping(volume) and volume.get("name") != credentials_volume \
                and _reads_secret_volume_reference(volume, secret):
            conflicts.append(Conflict(f"volume {volume.get('name')!r} reads the credentials Secret {secret!r}",
                                      volume, "no such volume", credentials.SETTING))
    return conflicts


_SECRET_NAMES = st.sampled_from(["oidc-jdoe", "other", None])
_ENV = st.one_of(
    st.fixed_dictionaries({"name": st.just("A"), "value": st.just("1")}),
    st.fixed_dictionaries({"name": st.just("B"), "valueFrom": st.one_of(
        st.none(), st.just({}), st.fixed_dictionaries({"secretKeyRef": st.one_of(
            st.none(), st.fixed_dictionaries({"name": _SECRET_NAMES, "key": st.just("k")}))}),
        st.just({"fieldRef": {"fieldPath": "metadata.name"}}))}),
    st.just({}), st.none(), st.just("text"))
_ENV_FROM = st.one_of(st.none(), st.just([]), st.lists(st.one_of(
    st.fixed_dictionaries({"secretRef": st.fixed_dictionaries({"name": _SECRET_NAMES})}),
    st.just({"configMapRef": {"name": "c"}}), st.just("x")), max_size=2))
_CONTAINER = st.fixed_dictionaries({"name": st.sampled_from(["nb", "oidc-token-refresher", "side"])}, optional={
    "env": st.one_of(st.lists(_ENV, max_size=3), st.none(), st.just({"A": "1"})),
    "envFrom": _ENV_FROM,
    "volumeMounts": st.one_of(
        st.lists(st.one_of(st.fixed_dictionaries({"name": st.sampled_from(["oidc-credentials", "eos"]),
                                                  "mountPath": st.just("/x")}),
                           st.just("odd"), st.none(), st.just({"mountPath": "/y"})), max_size=3),
        st.just({"name": "oidc-credentials"}), st.none(), st.just(("tuple",)))})
_VOLUME = st.one_of(
    st.just({"name": "dshm", "emptyDir": {"medium": "Memory"}}),
    st.fixed_dictionaries({"name": st.sampled_from(["oidc-credentials", "mine"]),
                           "secret": st.one_of(st.none(), st.fixed_dictionaries({"secretName": _SECRET_NAMES}))}),
    st.fixed_dictionaries({"name": st.just("proj"), "projected": st.one_of(st.none(), st.fixed_dictionaries({
        "sources": st.one_of(
            st.lists(st.one_of(st.just({"configMap": {"name": "c"}}), st.just({"serviceAccountToken": {"path": "t"}}),
                               st.fixed_dictionaries({"secret": st.fixed_dictionaries({"name": _SECRET_NAMES})}),
                               st.sampled_from([{"secret": None}, {"secret": {}}, {"secret": "x"}, {"secret": []}]),
                               st.just("odd"), st.just({})), max_size=3),
            st.just({"secret": {"name": "oidc-jdoe"}}), st.just(({"secret": {"name": "oidc-jdoe"}},)),
            st.just("sources"), st.none())}))}),
    st.just({"name": "s", "secret": None, "projected": None}), st.just("odd"), st.just({}))


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(_CONTAINER, st.just("odd")), max_size=3), st.lists(_CONTAINER, max_size=2),
       st.lists(_CONTAINER, max_size=1), st.lists(_VOLUME, max_size=4), st.sampled_from(["initContainers", "containers"]),
       st.sampled_from(["oidc-jdoe", ""]))  # a name, as _credential_conflicts gives (str of the Secret name)
def test_credential_conflicts_as_before(containers, init, ephemeral, volumes, refresher_list, secret) -> None:
    pod_spec = {"containers": containers, "initContainers": init, "ephemeralContainers": ephemeral, "volumes": volumes}
    refresher = {"name": "oidc-token-refresher"}

    def outcome(check):
        try:
            return check(pod_spec, refresher, refresher_list, "oidc-credentials", secret)
        except Exception as exc:  # an odd item fails as it did
            return type(exc), str(exc)

    assert outcome(credential_conflicts) == outcome(_conflicts_reference)


def _path_reference(path: str) -> Any:
    """render._path as it was: every path split and normalised."""
    if not path.startswith("/") or ".." in path.split("/"):
        return "refused"
    return posixpath.normpath(path)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.text(alphabet="/.ab~", max_size=10), PATHS.filter(lambda p: isinstance(p, str))))
def test_render_paths_as_before(path: str) -> None:
    from webhook.platform.base import ProfileInfo
    from webhook.platform.notebook.render import InvalidOwner, _path

    try:
        got = _path(path, "home path", ProfileInfo("jdoe", "jdoe@example.org", "personal"))
    except InvalidOwner:
        got = "refused"
    assert got == _path_reference(path)
