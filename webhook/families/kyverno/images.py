"""The ``images`` context variable: every container image of a Pod or Pod template, parsed like Kyverno does."""

from __future__ import annotations

import re
from typing import Any, Mapping

from webhook.cel.lib_image import parse_image as parse_reference
from webhook.model.quickinit import frozen_dataclass

DEFAULT_REGISTRY = "docker.io"
_POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def parse_image(image: str) -> dict[str, str]:
    """registry, path, name, tag, digest, reference (registry/path[:tag][@digest])."""
    rest, _, digest = image.partition("@")
    first, slash, remainder = rest.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, repo_and_tag = first, remainder
    else:
        registry, repo_and_tag = DEFAULT_REGISTRY, rest
    match = re.match(r"^(.*?)(?::([\w][\w.-]{0,127}))?$", repo_and_tag)
    path, tag = match.group(1), match.group(2) or ""
    if not tag and not digest:
        tag = "latest"
    info = {"registry": registry, "path": path, "name": path.rsplit("/", 1)[-1], "tag": tag, "digest": digest}
    reference = f"{registry}/{path}" + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
    info["reference"] = reference
    info["referenceWithTag"] = f"{registry}/{path}:{tag}" if tag else f"{registry}/{path}"
    return info


def pod_spec(resource: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not isinstance(resource, Mapping):
        return None
    path = _POD_SPEC_PATHS.get(str(resource.get("kind")), ("spec", "template", "spec"))
    node: Any = resource
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


_IMAGES = object()  # memo key: (object, its images); every policy of one admission asks for the same object's


def extract_images(resource: Mapping[str, Any] | None,
                   memo: dict[Any, Any] | None = None) -> dict[str, dict[str, Any]] | UnparsableImages:
    """`memo`: the request's (RuleEnv.memo), where the last object's images are kept."""
    last = memo.get(_IMAGES) if memo is not None else None
    if last is not None and last[0] is resource and resource is not None:
        return last[1]  # type: ignore[no-any-return]
    images = _extract(resource)
    if memo is not None:
        memo[_IMAGES] = (resource, images)
    return images


@frozen_dataclass
class UnparsableImages:
    """The `images` variable of a resource with an image that is no image reference (`*`, upper case, a bad tag): the
    API server stores such a pod, Kyverno's image parser refuses it, and every variable that reads `images` fails
    with this message (webhook.families.kyverno.variables), as in Kyverno."""

    message: str


def _extract(resource: Mapping[str, Any] | None) -> dict[str, dict[str, Any]] | UnparsableImages:
    spec = pod_spec(resource)
    if spec is None:
        return {}
    images: dict[str, dict[str, Any]] = {}
    for group in ("containers", "initContainers", "ephemeralContainers"):
        entries = {}
        for container in spec.get(group) or []:
            if isinstance(container, Mapping) and isinstance(container.get("image"), str):
                try:
                    parse_reference(container["image"])
                except ValueError:
                    image = container["image"]
                    return UnparsableImages(f"invalid image {image!r} (bad image: invalid reference format)")
                entries[str(container.get("name", ""))] = parse_image(container["image"])
        if entries:
            images[group] = entries
    return images
