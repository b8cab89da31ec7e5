"""``validate.podSecurity``: the Kubernetes Pod Security Standards (baseline, restricted) as the upstream
pod-security-admission checks define them (latest version), with Kyverno's ``exclude`` entries.

Each check yields violations (control name, container image or None for pod-level, field); an exclude entry
with the same ``controlName`` (and a matching image for container-level checks, and the ``restrictedField``/
``values`` when given) forgives it. Any violation left fails the rule.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from .gotypes import wildcard_match
from .images import pod_spec
from webhook.model.results import Outcome, RuleResult

from .rule_env import RuleEnv
from .rule_types import RuleRef
from .variables import JsonContext

from webhook.model.quickinit import frozen_dataclass

LEVELS = ("privileged", "baseline", "restricted")
_BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                  "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
_SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                 "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                 "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                 "net.ipv4.tcp_keepalive_probes"}
_SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
            "secret"}


@frozen_dataclass
class Violation:
    control: str
    image: str | None
    field: str
    value: Any = None


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(group) or []:
            if isinstance(container, Mapping):
                yield group, container


def _sc(node: Mapping[str, Any]) -> Mapping[str, Any]:
    value = node.get("securityContext")
    return value if isinstance(value, Mapping) else {}


def baseline(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Iterator[Violation]:
    pod_sc = _sc(spec)
    if (pod_sc.get("windowsOptions") or {}).get("hostProcess") is True:
        yield Violation("HostProcess", None, "spec.securityContext.windowsOptions.hostProcess", True)
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            yield Violation("Host Namespaces", None, f"spec.{field}", True)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, Mapping) and volume.get("hostPath") is not None:
            # the path is what an exclusion's values name (Kyverno's pss tests: values [/etc/nginx])
            yield Violation("HostPath Volumes", None, "spec.volumes[*].hostPath",
                            (volume.get("hostPath") or {}).get("path") if isinstance(volume.get("hostPath"), Mapping)
                            else None)
    for key, value in ((meta.get("annotations") or {}).items()):
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and not (
                value == "runtime/default" or str(value).startswith("localhost/")):
            yield Violation("AppArmor", None, f"metadata.annotations[{key}]", value)
    yield from _pod_level_options(pod_sc, "spec.securityContext", None)
    for sysctl in pod_sc.get("sysctls") or []:
        if isinstance(sysctl, Mapping) and sysctl.get("name") not in _SAFE_SYSCTLS:
            yield Violation("Sysctls", None, "spec.securityContext.sysctls[*].name", sysctl.get("name"))
    for group, container in _containers(spec):
        yield from _container_baseline(group, container)


def _pod_level_options(sc: Mapping[str, Any], where: str, image: str | None) -> Iterator[Violation]:
    apparmor = (sc.get("appArmorProfile") or {}).get("type")
    if apparmor is not None and apparmor not in ("RuntimeDefault", "Localhost"):
        yield Violation("AppArmor", image, f"{where}.appArmorProfile.type", apparmor)
    selinux = sc.get("seLinuxOptions")
    if isinstance(selinux, Mapping):
        if selinux.get("type", "") not in _SELINUX_TYPES:
            yield Violation("SELinux", image, f"{where}.seLinuxOptions.type", selinux.get("type"))
        for field in ("user", "role"):
            if selinux.get(field):
                yield Violation("SELinux", image, f"{where}.seLinuxOptions.{field}", selinux.get(field))
    seccomp = (sc.get("seccompProfile") or {}).get("type")
    if seccomp == "Unconfined":
        yield Violation("Seccomp", image, f"{where}.seccompProfile.type", seccomp)


def _container_baseline(group: str, container: Mapping[str, Any]) -> Iterator[Violation]:
    image, sc = str(container.get("image", "")), _sc(container)
    where = f"spec.{group}[*].securityContext"
    if (sc.get("windowsOptions") or {}).get("hostProcess") is True:
        yield Violation("HostProcess", image, f"{where}.windowsOptions.hostProcess", True)
    if sc.get("privileged") is True:
        yield Violation("Privileged Containers", image, f"{where}.privileged", True)
    for cap in (sc.get("capabilities") or {}).get("add") or []:
        if cap not in _BASELINE_CAPS:
            yield Violation("Capabilities", image, f"{where}.capabilities.add", cap)
    for port in container.get("ports") or []:
        if isinstance(port, Mapping) and port.get("hostPort") not in (None, 0):
            yield Violation("Host Ports", image, f"spec.{group}[*].ports[*].hostPort", port.get("hostPort"))
    if sc.get("procMount") not in (None, "Default"):
        yield Violation("/proc Mount Type", image, f"{where}.procMount", sc.get("procMount"))
    yield from _pod_level_options(sc, where, image)


def restricted(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Iterator[Violation]:
    yield from baseline(meta, spec)
    pod_sc = _sc(spec)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, Mapping) and not any(k in _VOLUMES for k in volume if k != "name"):
            kinds = [k for k in volume if k != "name"]
            yield Violation("Volume Types", None, "spec.volumes[*]", kinds[0] if kinds else None)
    pod_non_root = pod_sc.get("runAsNonRoot")
    if pod_sc.get("runAsUser") == 0:
        yield Violation("Running as Non-root user", None, "spec.securityContext.runAsUser", 0)
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type")
    for group, container in _containers(spec):
        image, sc = str(container.get("image", "")), _sc(container)
        where = f"spec.{group}[*].securityContext"
        if sc.get("allowPrivilegeEscalation") is not False:
            yield Violation("Privilege Escalation", image, f"{where}.allowPrivilegeEscalation",
                            sc.get("allowPrivilegeEscalation"))
        non_root = sc.get("runAsNonRoot", pod_non_root)
        if non_root is not True:
            yield Violation("Running as Non-root", image, f"{where}.runAsNonRoot", non_root)
        if sc.get("runAsUser") == 0:
            yield Violation("Running as Non-root user", image, f"{where}.runAsUser", 0)
        seccomp = (sc.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            yield Violation("Seccomp", image, f"{where}.seccompProfile.type", seccomp)
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            yield Violation("Capabilities", image, f"{where}.capabilities.drop", caps.get("drop"))
        for cap in caps.get("add") or []:
            if cap != "NET_BIND_SERVICE":
                yield Violation("Capabilities", image, f"{where}.capabilities.add", cap)


@frozen_dataclass
class PodSecurityCheck:
    level: str
    version: str
    exclude: tuple[Mapping[str, Any], ...]

    def violations(self, resource: Mapping[str, Any]) -> list[Violation]:
        spec = pod_spec(resource)
        if spec is None or self.level == "privileged":
            return []
        kind = resource.get("kind")
        meta = resource.get("metadata") or {} if kind == "Pod" else ((resource.get("spec") or {}).get(
            "template") or {}).get("metadata") or {}
        check = baseline if self.level == "baseline" else restricted
        return [v for v in dict.fromkeys(check(meta, spec)) if not self._excluded(v)]

    def _excluded(self, violation: Violation) -> bool:
        for entry in self.exclude:
            if entry.get("controlName") != violation.control:
                continue
            images = entry.get("images") or []
            if violation.image is not None and images and not any(wildcard_match(str(p), violation.image)
                                                                   for p in images):
                continue
            if violation.image is not None and not images:
                continue
            field = entry.get("restrictedField")
            if field and not _field_matches(str(field), violation.field):
                continue
            values = entry.get("values")
            if values and str(violation.value) not in [str(v) for v in values]:
                continue
            return True
        return False

    def check(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv,
              resource: Mapping[str, Any] | None) -> RuleResult | None:
        """validate.podSecurity as a rule's handler (rule_types.ValidationHandler); nothing on DELETE."""
        if resource is None:
            return None
        found = self.violations(resource)
        if not found:
            return ref.result(Outcome.PASS, f"validation rule '{ref.name}' passed.")
        return ref.result(Outcome.FAIL, self.failure_message(ref.name, found))

    def failure_message(self, rule: str, found: list[Violation]) -> str:
        details = "; ".join(f"{v.control} ({v.field}={v.value})" for v in found)
        return f"Validation rule '{rule}' failed. It violates PodSecurity \"{self.level}:{self.version}\": {details}"


def _field_matches(pattern: str, field: str) -> bool:
    return wildcard_match(pattern.replace("[*]", "*"), field.replace("[*]", "*")) or pattern == field


# the controls Kyverno checks per container (an exclusion must name images) and per pod (it must not)
CONTAINER_CONTROLS = ("Capabilities", "Privileged Containers", "Host Ports", "/proc Mount Type", "Privilege Escalation")
POD_CONTROLS = ("Host Namespaces", "HostPath Volumes", "Sysctls", "Volume Types")


def exclusion_problems(entry: Mapping[str, Any], path: str) -> list[str]:
    """What Kyverno says of an exclusion of Pod Security controls (its PodSecurityStandard.Validate), in a rule's
    `podSecurity.exclude` or an exception's `podSecurity`; `path` is the entry's."""
    problems = []
    control = entry.get("controlName")
    if control in CONTAINER_CONTROLS and not entry.get("images"):
        problems.append(f"{path}.controlName: Invalid value: {control!r}: exclude.images must be specified for the "
                        "container level control")
    elif control in POD_CONTROLS and entry.get("images"):
        problems.append(f"{path}.controlName: Invalid value: {control!r}: exclude.images must not be specified for the "
                        "pod level control")
    if entry.get("restrictedField") and not entry.get("values"):
        problems.append(f"{path}.values: Forbidden: values is required")
    if not entry.get("restrictedField") and entry.get("values"):
        problems.append(f"{path}.restrictedField: Forbidden: restrictedField is required")
    return problems


def compile_pod_security(spec: Mapping[str, Any]) -> PodSecurityCheck:
    level = str(spec.get("level", ""))
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    version = str(spec.get("version") or "latest")
    if version != "latest" and not version.startswith("v1."):
        raise ValueError(f"version must be 'latest' or 'v1.N', got {version!r}")
    exclude = tuple(spec.get("exclude") or ())
    for entry in exclude:
        if not entry.get("controlName"):
            raise ValueError("every exclude entry needs controlName")
    return PodSecurityCheck(level, version, exclude)
