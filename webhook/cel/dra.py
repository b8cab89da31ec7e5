"""The DRA device environment: `device.driver`, `device.attributes[domain].name`, `device.capacity[domain].name`.

Selectors are checked when the policy loads, on the token stream: the fields of `device`, and for
domains whose attributes are known (NVIDIA's DRA driver), the attribute and capacity names. So a typo
like `device.attribute[` or `.profle` is a load error, not a selector that silently never matches.
At evaluation, attribute values in the ResourceSlice shape (`{"string": ...}`, `{"version": ...}`)
become CEL values and capacities become quantities, as Kubernetes presents them.
"""

from __future__ import annotations

from typing import Any, Mapping

from webhook.cel.errors import CelError
from webhook.cel.lib_quantity import quantity, semver
from webhook.cel.source import Token

DEVICE_FIELDS = ("driver", "attributes", "capacity", "allowMultipleAllocations")
KNOWN_ATTRIBUTES: dict[str, frozenset[str]] = {
    "gpu.nvidia.com": frozenset({
        "type", "uuid", "productName", "brand", "architecture", "cudaComputeCapability", "driverVersion",
        "cudaDriverVersion", "pcieBusID", "pcieRoot", "index", "minor", "profile", "parentUUID",
        "parentIndex", "parentMinor", "placement"}),
}
KNOWN_CAPACITY: dict[str, frozenset[str]] = {
    "gpu.nvidia.com": frozenset({"memory", "multiprocessors", "copyEngines", "decoders", "encoders",
                                 "jpegEngines", "ofaEngines"}),
}


def _string(tok: Token) -> str | None:
    if tok.kind != "string":
        return None
    body = tok.text.lstrip("rR")
    return body[1:-1] if body[:1] in "'\"" and body[:3] not in ("'''", '"""') else None


def _check_domain_member(tokens: list[Token], i: int, table: Mapping[str, frozenset[str]], what: str) -> None:
    """tokens[i] is `[` after device.attributes / device.capacity: check `['domain'].name`."""
    window = tokens[i:i + 5]
    if len(window) < 5 or window[2].text != "]" or window[3].text != "." or window[4].kind != "ident":
        return
    domain = _string(window[1])
    known = table.get(domain or "")
    if known is not None and window[4].text not in known:
        raise CelError(f"device.{what}[{domain!r}] has no {window[4].text!r}; "
                       f"known: {', '.join(sorted(known))}")


def check_device_expression(tokens: list[Token]) -> None:
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text != "device" or (i and tokens[i - 1].text == "."):
            continue
        if i + 2 >= len(tokens) or tokens[i + 1].text != "." or tokens[i + 2].kind != "ident":
            continue
        field = tokens[i + 2].text
        if field not in DEVICE_FIELDS:
            raise CelError(f"device has no field {field!r}; expected one of {', '.join(DEVICE_FIELDS)}")
        if field in ("attributes", "capacity") and i + 3 < len(tokens) and tokens[i + 3].text == "[":
            table = KNOWN_ATTRIBUTES if field == "attributes" else KNOWN_CAPACITY
            _check_domain_member(tokens, i + 3, table, field)


def _attribute(value: Any) -> Any:
    if isinstance(value, Mapping) and len(value) == 1:
        (kind, inner), = value.items()
        if kind == "version":
            return semver(inner)
        if kind in ("string", "int", "bool"):
            return inner
    return value


def _capacity(value: Any) -> Any:
    if isinstance(value, Mapping) and "value" in value:
        value = value["value"]
    return quantity(str(value)) if isinstance(value, (str, int)) else value


def device_activation(device: Mapping[str, Any]) -> dict[str, Any]:
    """A device as the selector sees it: attributes and capacity grouped by domain, typed as in Kubernetes."""
    out = dict(device)
    out["attributes"] = {d: {k: _attribute(v) for k, v in attrs.items()}
                         for d, attrs in (device.get("attributes") or {}).items()}
    out["capacity"] = {d: {k: _capacity(v) for k, v in caps.items()}
                       for d, caps in (device.get("capacity") or {}).items()}
    return out
