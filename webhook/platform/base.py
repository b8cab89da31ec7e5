"""What the platform batteries share: their document envelope, the profile conventions, the policy mixin."""

from __future__ import annotations

from collections.abc import Mapping as MappingABC
from typing import Any, ClassVar, Mapping, TypeGuard

from webhook.model.policy import PolicyTraits
from webhook.model.quickinit import frozen_dataclass
from webhook.policy.common import SpecMatched
from webhook.policy.common import document_schema as _document_schema

API_VERSION = "quartermaster.dev/v1alpha1"
PROFILE_LABEL = "app.kubernetes.io/part-of"
PROFILE_LABEL_VALUE = "kubeflow-profile"
DEFAULT_PROFILE_SELECTOR = {"matchLabels": {PROFILE_LABEL: PROFILE_LABEL_VALUE}}
OWNER_ANNOTATION = "owner"
CLASS_LABEL = "quartermaster.dev/profile-class"


_JSON_NON_MAPPINGS = frozenset({str, int, float, bool, list, type(None)})


def is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(value, Mapping), with the values of decoded JSON told apart before the ABC machinery
    (which costs more than most of what the batteries do with the value)."""
    kind = type(value)
    if kind is dict:
        return True
    if kind in _JSON_NON_MAPPINGS:
        return False
    return isinstance(value, MappingABC)  # typing.Mapping is the same ABC, checked slower


def document_schema(kind: str, spec_properties: Mapping[str, Any], required: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """A battery's whole document (quartermaster.dev/v1alpha1), with the common match fields in its spec."""
    return _document_schema(API_VERSION, kind, spec_properties, required)


class Battery(SpecMatched):
    """The CompiledPolicy attributes every battery has alike; each battery is a frozen dataclass with
    `id`, `source`, `match`, `failure_policy`, `action`, `annotations` and declares its `phases`."""

    error: str | None = None  # batteries refuse the set on compile errors, so a loaded one never has one
    background: bool = True  # background scans and `report` evaluate the validating batteries
    # mutate() never edits the object it is handed: the engine need not copy it
    traits: ClassVar[PolicyTraits] = PolicyTraits(copies_input=True, why="a platform battery, evaluated in Python")

    @property
    def name(self) -> str:
        return self.id.name  # type: ignore[attr-defined]


# --- profiles --------------------------------------------------------------------------------------
@frozen_dataclass(dict_init=True)
class ProfileInfo:
    """A Kubeflow profile namespace, as the batteries see it."""

    namespace: str
    owner: str  # the owner annotation, an e-mail; "" when absent
    profile_class: str

    @property
    def user(self) -> str:
        """The local part of the owner's e-mail ("jdoe" for jdoe@cern.ch); "" when there is no usable owner."""
        local = self.owner.split("@", 1)[0].strip() if "@" in self.owner else ""
        return local

    @property
    def user_initial(self) -> str:
        return self.user[:1]


def profile_info(namespace: Mapping[str, Any] | None, namespace_name: str = "") -> ProfileInfo:
    meta = (namespace or {}).get("metadata") or {}
    return ProfileInfo(
        namespace=meta.get("name", namespace_name),
        owner=str((meta.get("annotations") or {}).get(OWNER_ANNOTATION, "")),
        profile_class=str((meta.get("labels") or {}).get(CLASS_LABEL, "personal")) or "personal",
    )
