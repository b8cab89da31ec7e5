"""Kyverno's image-reference library: `image('nginx:1.27').registry()` and friends.

Parsing follows go-containerregistry's defaults, as Kyverno does: Docker Hub is `index.docker.io`,
single-name Hub repositories live under `library/`, a missing tag means `latest`, and a reference with
a digest identifies the image by that digest.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from webhook.cel.functions import Library, fn, method
from webhook.cel.values import expect, opaque

_HUB = "index.docker.io"
_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")
_REGISTRY = re.compile(r"^[A-Za-z0-9.-]+(?::\d+)?$|^\[[0-9a-fA-F:]+\](?::\d+)?$")


def _split_registry(name: str) -> tuple[str, str]:
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        if not _REGISTRY.match(first):
            raise ValueError(f"could not parse reference: invalid registry {first!r}")
        return ("index.docker.io" if first == "docker.io" else first), rest
    return _HUB, name


def parse_image(text: str) -> dict[str, Any]:
    return dict(_parse_image(text))


@functools.lru_cache(maxsize=4096)
def _parse_image(text: str) -> dict[str, Any]:
    if not isinstance(text, str) or not text or text != text.strip():
        raise ValueError(f"could not parse reference: {text!r}")
    name, at, digest = text.partition("@")
    tag = ""
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = name[:len(name) - len(last)] + last.split(":", 1)[0], last.split(":", 1)[1]
    registry, repository = _split_registry(name)
    if registry == _HUB and "/" not in repository:
        repository = f"library/{repository}"
    if not repository or not all(_COMPONENT.match(c) for c in repository.split("/")):
        raise ValueError(f"could not parse reference: {text!r}: repository must be lowercase")
    if tag and not _TAG.match(tag):
        raise ValueError(f"could not parse reference: {text!r}: invalid tag {tag!r}")
    if at and not _DIGEST.match(digest):
        raise ValueError(f"could not parse reference: {text!r}: invalid digest {digest!r}")
    identifier = digest if at else (tag or "latest")
    return opaque("image", text=text, registry=registry, repository=repository,
                  identifier=identifier, tag="" if at else identifier, digest=digest if at else "")


def _is_image(text: str) -> bool:
    try:
        parse_image(text)
    except ValueError:
        return False
    return True


def _field(name: str):
    return lambda value: expect(value, "image")[name]


IMAGE = Library("image", (
    fn("image", ["string"], "map", parse_image),
    fn("parseImageReference", ["string"], "map", parse_image),
    fn("ParseImageRef", ["string"], "map", parse_image),
    fn("isImage", ["string"], "bool", _is_image),
    method("containsDigest", ["map"], "bool", lambda v: bool(expect(v, "image")["digest"])),
    *(method(name, ["map"], "string", _field(name)) for name in ("registry", "repository", "identifier", "tag", "digest")),
))
