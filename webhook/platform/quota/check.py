"""The quota decision for one request, and the messages a notebook user reads.

A request is refused only when it adds usage and the profile would then be over its limit: an
update that adds nothing (a label on a pod, a claim generated from a template already charged)
passes even in a profile that is over quota, e.g. after the platform team lowered the limit.
"""

from __future__ import annotations

from fractions import Fraction
from typing import AbstractSet, Callable, Mapping

from webhook.model.cluster import POD, PVC, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE
from webhook.model.quantity import format_bytes, format_count
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.quota.holds import NOTHING_ADDED, Added, with_charges
from webhook.platform.quota.limits import Limit, ProfileLimits, gpus_text
from webhook.platform.quota.objects import ProfileObjects
from webhook.platform.quota.settings import ADVICE_FIELDS, QuotaSettings
from webhook.platform.quota.reads import Key
from webhook.platform.quota.usage import Charge, Usage, measure

GPU_RULE = "gpu-quota"
STORAGE_RULE = "storage-quota"
RULE_KINDS = {GPU_RULE: frozenset({POD, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE}), STORAGE_RULE: frozenset({POD, PVC})}


@frozen_dataclass(dict_init=True)
class Subject:
    """The object under review, named as the messages name it."""

    kind: str
    name: str
    operation: str

    @property
    def phrase(self) -> str:
        what = f"{self.kind} {self.name}"
        return f"this update of {what}" if self.operation == "UPDATE" else f"this {what}"


@frozen_dataclass(dict_init=True)
class RuleOutcome:
    rule: str
    exceeded: bool
    message: str
    summary: str = ""  # the warning kubectl prints in Audit mode: short, with where to read the rest


@frozen_dataclass(dict_init=True)
class Decision:
    outcomes: tuple[RuleOutcome, ...]
    adds: bool  # the request adds usage: hold a reservation for it when admitted
    notes: tuple[str, ...]  # for the user, as warnings
    added: Added = NOTHING_ADDED  # set when `adds`

    @property
    def exceeded(self) -> bool:
        return any(o.exceeded for o in self.outcomes)


def _above(amount: Fraction, other: Fraction) -> bool:
    """amount > other: for two Fractions (the totals and limits always are), the same integer comparison that
    Fraction's own makes, without its numeric-tower checks (several per decision)."""
    if type(amount) is Fraction and type(other) is Fraction:
        return amount.numerator * other.denominator > other.numerator * amount.denominator
    return amount > other


def _holders(usage: Usage, reserved: AbstractSet[tuple[str, str]], amount_of: Callable[[Charge], Fraction], unit: Callable[[Fraction], str],
             show_unbounded: bool, limit: int) -> str:
    """The biggest users, by name: "Pod nb-a: 1, ResourceClaim shared: 1 and 2 more"."""
    charges = [c for c in usage.charges.values() if amount_of(c) > 0 or (show_unbounded and c.unbounded)]
    charges.sort(key=lambda c: (not (show_unbounded and c.unbounded), -amount_of(c), c.label))
    if not charges:
        return "nothing"
    parts = []
    for charge in charges[:limit]:
        amount = "every matching device" if show_unbounded and charge.unbounded else unit(amount_of(charge))
        pending = " (being admitted)" if (charge.kind, charge.name) in reserved else ""
        parts.append(f"{charge.label}{pending}: {amount}")
    more = len(charges) - limit
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def _holds_nothing(base: Usage, amount_of: Callable[[Charge], Fraction], own_key: tuple[str, str] | None = None) -> bool:
    """Nothing but the request's own object (its size before an update) holds any of this resource."""
    return not base.unbounded and all(amount_of(c) <= 0 for key, c in base.charges.items() if key != own_key)


def _advice(template: str, limits: ProfileLimits) -> str:
    return template.format(**dict(zip(ADVICE_FIELDS, (limits.namespace, limits.profile_class, limits.owner))))


def _details(namespace: str) -> str:
    return f"kubectl get polr -n {namespace}"


def _gpu_outcome(settings: QuotaSettings, limits: ProfileLimits, reserved: AbstractSet[tuple[str, str]], base: Usage,
                 projected: Usage, subject: Subject, whole: Usage) -> tuple[RuleOutcome, bool]:
    limit: Limit = limits.gpus
    assert limit.amount is not None
    unbounded_added = len(projected.unbounded) > len(base.unbounded)
    adds = _above(projected.gpus, base.gpus) or unbounded_added
    ns = limits.namespace
    if not adds:
        at = "every matching device" if whole.unbounded else gpus_text(whole.gpus)
        return RuleOutcome(GPU_RULE, False, f"{subject.phrase} adds no GPUs (profile {ns!r} at {at} of "
                                            f"{limit.as_gpus}, {limit.origin})"), adds
    if not (_above(projected.gpus, limit.amount) or projected.unbounded):
        return RuleOutcome(GPU_RULE, False, f"{subject.phrase} fits: profile {ns!r} at {gpus_text(projected.gpus)} of "
                                            f"{limit.as_gpus} with it ({limit.origin})"), adds
    in_use = _holders(base, reserved, lambda c: c.gpus, format_count, True, settings.max_listed)
    used = "every matching device" if base.unbounded else format_count(base.gpus)
    # a template is not charged itself: creating one charges the pending pods that already use it
    verb = "would charge the pods that use it" if subject.kind == RESOURCE_CLAIM_TEMPLATE else "asks for"
    if unbounded_added:
        asks = (f"{subject.phrase} {verb} every matching device (allocationMode: All), which never fits a bounded "
                f"quota; ask for an exact count of devices instead")
        summary = f"allocationMode: All never fits the GPU quota of {ns!r}; ask for a count; {_details(ns)}"
    else:
        added = format_count(projected.gpus - base.gpus)
        asks = f"{subject.phrase} {verb} {added} more"
        summary = f"over GPU quota in {ns!r} ({used} in use + {added} > {format_count(limit.amount)}); {_details(ns)}"
    if _holds_nothing(base, lambda c: c.gpus) and not unbounded_added:
        # nothing to stop or delete: the request alone is more than the profile ever allows
        message = (f"GPU quota exceeded in profile {ns!r}: limit {gpus_text(limit.amount)} ({limit.origin}), nothing "
                   f"else in use; {asks}, so it can never fit: ask for at most {gpus_text(limit.amount)}, or ask the "
                   f"platform team to raise the limit.")
    else:
        message = (f"GPU quota exceeded in profile {ns!r}: limit {gpus_text(limit.amount)} ({limit.origin}), in use "
                   f"{used} ({in_use}), {asks}. {_advice(settings.gpu_advice, limits)}")
    return RuleOutcome(GPU_RULE, True, message, summary), adds


def _storage_outcome(settings: QuotaSettings, limits: ProfileLimits, reserved: AbstractSet[tuple[str, str]], base: Usage,
                     projected: Usage, subject: Subject, whole: Usage) -> tuple[RuleOutcome, bool]:
    limit: Limit = limits.storage
    assert limit.amount is not None
    adds = _above(projected.storage, base.storage)
    ns, cap = limits.namespace, limit.as_bytes
    if not adds:
        return RuleOutcome(STORAGE_RULE, False, f"{subject.phrase} adds no storage (profile {ns!r} at "
                                                f"{format_bytes(whole.storage)} of {cap}, {limit.origin})"), adds
    if not _above(projected.storage, limit.amount):
        return RuleOutcome(STORAGE_RULE, False, f"{subject.phrase} fits: profile {ns!r} at "
                                                f"{format_bytes(projected.storage)} of {cap} with it ({limit.origin})"), adds
    in_use = _holders(base, reserved, lambda c: c.storage, format_bytes, False, settings.max_listed)
    own = projected.charge(subject.kind, subject.name).storage
    total = f" ({format_bytes(own)} in total)" if subject.operation == "UPDATE" else ""
    added = format_bytes(projected.storage - base.storage)
    if _holds_nothing(base, lambda c: c.storage, own_key=(subject.kind, subject.name)):
        message = (f"Storage quota exceeded in profile {ns!r}: limit {cap} ({limit.origin}), nothing else in use; "
                   f"{subject.phrase} asks for {added} more{total}, so it can never fit: ask for at most {cap}, or ask the "
                   f"platform team to raise the limit.")
    else:
        message = (f"Storage quota exceeded in profile {ns!r}: limit {cap} ({limit.origin}), in use "
                   f"{format_bytes(base.storage)} ({in_use}), {subject.phrase} asks for {added} more{total}. "
                   f"{_advice(settings.storage_advice, limits)}")
    summary = f"over storage quota in {ns!r} ({format_bytes(base.storage)} in use + {added} > {cap}); {_details(ns)}"
    return RuleOutcome(STORAGE_RULE, True, message, summary), adds


def decide(settings: QuotaSettings, limits: ProfileLimits, before: ProfileObjects, after: ProfileObjects,
           subject: Subject, whole: ProfileObjects | None = None, extra: Mapping[Key, Charge] | None = None) -> Decision:
    """Pure: reads only immutable inputs, so it may run in a worker thread. `whole`: the profile as it
    is, when `after` is only part of it (a background scan judges an object against its elders). `extra`:
    charges the objects do not show (other replicas' reservations, holds.py), counted before and after."""
    base, projected = measure(before, settings.rules), measure(after, settings.rules)
    total = measure(whole, settings.rules) if whole is not None else projected
    reserved: AbstractSet[Key] = before.reserved
    if extra:
        base, projected, reserved = with_charges(base, extra), with_charges(projected, extra), reserved | set(extra)
    return decide_usage(settings, limits, base, projected, reserved, subject, total)


def decide_usage(settings: QuotaSettings, limits: ProfileLimits, base: Usage, projected: Usage,
                 reserved: AbstractSet[tuple[str, str]], subject: Subject, whole: Usage | None = None) -> Decision:
    """The decision from the usage without the request (`base`) and with it (`projected`); `whole`: the
    profile as it is when that differs from `projected` (scans). The policy keeps these totals
    incrementally (totals.py); `decide` counts them from scratch."""
    total = projected if whole is None else whole
    outcomes: list[RuleOutcome] = []
    adds = False
    if limits.gpus.amount is not None and subject.kind in RULE_KINDS[GPU_RULE]:
        outcome, added = _gpu_outcome(settings, limits, reserved, base, projected, subject, total)
        outcomes.append(outcome)
        adds = adds or added
    if limits.storage.amount is not None and subject.kind in RULE_KINDS[STORAGE_RULE]:
        outcome, added = _storage_outcome(settings, limits, reserved, base, projected, subject, total)
        outcomes.append(outcome)
        adds = adds or added
    notes = projected.charge(subject.kind, subject.name).notes if subject.kind == POD else ()
    added = _added(base, projected) if adds else NOTHING_ADDED
    return Decision(tuple(outcomes), adds, tuple(limits.notes) + tuple(notes), added)


def _added(base: Usage, projected: Usage) -> Added:
    gpus, storage = projected.gpus - base.gpus, projected.storage - base.storage
    return Added(max(gpus, Fraction(0)), max(storage, Fraction(0)), len(projected.unbounded) > len(base.unbounded))
