"""Only the token refresher touches the OIDC credentials.

The credentials Secret holds a refresh token: whoever reads it can mint the user's tokens for as long as
it lives. The injection supplies the Secret volume for the refresher; a pod must not get it for anything
else, so a pod is refused when
- any container but the refresher mounts the credentials volume (by its name: the webhook supplies it),
- a volume of the pod's own, or an env/envFrom reference, reads the credentials Secret,
- a pre-set refresher differs from ours in any field that can run code or read data. `covers` lets a
  pod's item carry extra fields (API defaults); here an extra `lifecycle.postStart` or `envFrom` would
  run the user's code next to the credentials, so these fields must match both ways.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from webhook.platform.notebook.merge import Conflict, covers
from webhook.platform.base import is_mapping

# fields of a container that run code, choose what runs, or read data
CODE_FIELDS = ("image", "command", "args", "workingDir", "env", "envFrom", "volumeMounts", "volumeDevices",
               "lifecycle", "startupProbe", "livenessProbe", "readinessProbe", "securityContext", "restartPolicy")
# probe fields the API server defaults; timing, not code
_PROBE_TIMING = frozenset({"initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                           "failureThreshold", "terminationGracePeriodSeconds"})
SETTING = "spec.tokenRefresher.credentials"


def _without_timing(key: str, value: Any) -> Any:
    if key.endswith("Probe") and is_mapping(value):
        return {k: v for k, v in value.items() if k not in _PROBE_TIMING}
    return value


# The ServiceAccount admission plugin mounts the pod's API token into every container, the refresher included:
# it runs again after mutating webhooks (reinvocation), so the refresher it sees has that mount, and so does the
# validating phase. The mount is the API server's, not the pod author's, and reads only the pod's own token.
API_TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
API_TOKEN_VOLUME_PREFIX = "kube-api-access-"


def without_api_token_mount(container: Mapping[str, Any]) -> Mapping[str, Any]:
    """The container as the pod's author or a webhook wrote it: without the API server's token mount."""
    mounts = container.get("volumeMounts")
    if not isinstance(mounts, list) or not mounts:
        return container
    kept = [m for m in mounts if not (is_mapping(m) and m.get("mountPath") == API_TOKEN_MOUNT_PATH
                                      and str(m.get("name", "")).startswith(API_TOKEN_VOLUME_PREFIX))]
    if len(kept) == len(mounts):
        return container
    out = dict(container)
    if kept:
        out["volumeMounts"] = kept
    else:
        del out["volumeMounts"]
    return out


def refresher_mismatch(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> str | None:
    """The first code-bearing field where a pre-set refresher is not exactly ours, or None."""
    for key in CODE_FIELDS:
        ours, theirs = desired.get(key), existing.get(key)
        if ours is None:
            if theirs not in (None, "", [], {}):
                return key
        elif not (covers(theirs, ours) and covers(_without_timing(key, ours), _without_timing(key, theirs))):
            return key
    return None


CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def _reads_secret_volume(volume: Mapping[str, Any], secret: str) -> bool:
    if (volume.get("secret") or {}).get("secretName") == secret:
        return True
    sources = (volume.get("projected") or {}).get("sources") or []
    # one loop, no generator: every pod projects its service account token (token, CA, namespace)
    for source in sources:
        if is_mapping(source) and (source.get("secret") or {}).get("name") == secret:
            return True
    return False


def _env_reads_secret(container: Mapping[str, Any], secret: str) -> bool:
    for env in container.get("env") or []:
        ref = (env.get("valueFrom") or {}).get("secretKeyRef") if is_mapping(env) else None
        if is_mapping(ref) and ref.get("name") == secret:
            return True
    return any(is_mapping(e) and (e.get("secretRef") or {}).get("name") == secret
               for e in container.get("envFrom") or [])


def _plain_env(container: Mapping[str, Any]) -> bool:
    """No env entry takes its value from anywhere and there is no envFrom (a notebook's env, usually): then
    nothing in them reads a Secret, told without _env_reads_secret's walk."""
    env = container.get("env") or []
    return (not container.get("envFrom") and type(env) is list
            and all(type(e) is dict and "valueFrom" not in e for e in env))


def _mounts_volume(mounts: Any, volume: str) -> bool:
    """Does any mount name `volume`? One loop, no generator."""
    for mount in mounts:
        if is_mapping(mount) and mount.get("name") == volume:
            return True
    return False


def credential_conflicts(pod_spec: Mapping[str, Any], refresher: Mapping[str, Any], refresher_list: str,
                         credentials_volume: str, secret: str) -> list[Conflict]:
    """Everything in the pod, other than our refresher, that could read the credentials."""
    conflicts = []
    for key in CONTAINER_LISTS:
        for container in pod_spec.get(key) or []:
            if not is_mapping(container):
                continue
            name = container.get("name")
            if key == refresher_list and name == refresher["name"]:
                continue  # the refresher itself: checked field by field when the pod brings its own
            mounts = container.get("volumeMounts") or []
            if _mounts_volume(mounts, credentials_volume):
                mounts = [m for m in mounts if is_mapping(m)]
                conflicts.append(Conflict(f"container {name!r} in spec.{key} mounts the credentials volume "
                                          f"{credentials_volume!r}, which only the token refresher may", mounts,
                                          "no such mount", SETTING))
            if not _plain_env(container) and _env_reads_secret(container, secret):
                conflicts.append(Conflict(f"container {name!r} in spec.{key} reads the credentials Secret "
                                          f"{secret!r} through env or envFrom",
                                          container.get("env") or container.get("envFrom"), "no such reference",
                                          SETTING))
    for volume in pod_spec.get("volumes") or []:
        if type(volume) is dict and "secret" not in volume and "projected" not in volume:
            continue  # neither a Secret nor projected (emptyDir, PVC, configMap...): it reads no Secret
        if is_mapping(volume) and volume.get("name") != credentials_volume and _reads_secret_volume(volume, secret):
            conflicts.append(Conflict(f"volume {volume.get('name')!r} reads the credentials Secret {secret!r}",
                                      volume, "no such volume", SETTING))
    return conflicts


def secrets_read(pod_spec: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(Secret name, where) for every Secret the pod's volumes and containers' env read."""
    for volume in pod_spec.get("volumes") or []:
        if not is_mapping(volume):
            continue
        name = (volume.get("secret") or {}).get("secretName")
        if name:
            yield str(name), f"volume {volume.get('name')!r}"
        for source in (volume.get("projected") or {}).get("sources") or []:
            if is_mapping(source) and (source.get("secret") or {}).get("name"):
                yield str(source["secret"]["name"]), f"projected volume {volume.get('name')!r}"
    for key in CONTAINER_LISTS:
        for container in pod_spec.get(key) or []:
            if not is_mapping(container) or _plain_env(container):
                continue
            where = f"container {container.get('name')!r} in spec.{key}"
            for env in container.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef") if is_mapping(env) else None
                if is_mapping(ref) and ref.get("name"):
                    yield str(ref["name"]), f"env {env.get('name')!r} of {where}"
            for source in container.get("envFrom") or []:
                if is_mapping(source) and (source.get("secretRef") or {}).get("name"):
                    yield str(source["secretRef"]["name"]), f"envFrom of {where}"
