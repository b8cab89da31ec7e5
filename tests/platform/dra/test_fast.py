"""The DRA rewrite's shortcuts give what the general path gives: whole GPU counts without Fractions,
the mapping lookup that rejects most keys at once, request names and selectors made once per mapping,
and the rewrite that copies only the containers it changes."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings, strategies as st

from tests.platform.dra.test_rewrite import config, container, pod
from webhook.model.patch import diff
from webhook.model.quantity import QuantityError, parse_quantity, plain_whole
from webhook.platform.dra import legacy, rewrite
from webhook.platform.dra.config import RewriteConfig
from webhook.platform.dra.legacy import LegacyError, legacy_uses
from webhook.platform.dra.rewrite import plan_rewrite

_QUANTITY_TEXT = st.text(alphabet="0123456789kKMGTPEimun+-.eE ", max_size=22)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(_QUANTITY_TEXT, st.integers(), st.floats(), st.booleans(), st.none()))
def test_plain_whole_is_the_whole_parse_or_says_nothing(value: Any) -> None:
    whole = plain_whole(value)
    if whole is None:
        return
    amount = parse_quantity(value)
    assert amount.denominator == 1 and whole == int(amount) and type(whole) is int


def _whole_reference(value: Any, where: str) -> int:
    """legacy._whole as first written: parse_quantity for every value."""
    try:
        amount = parse_quantity(value)
    except QuantityError as exc:
        return ("error", type(exc).__name__)  # type: ignore[return-value]
    if amount < 0 or amount.denominator != 1:
        return ("refused",)  # type: ignore[return-value]
    return int(amount)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(_QUANTITY_TEXT, st.integers(min_value=-5, max_value=2**64), st.sampled_from(["1", "8", " 2", "2m", "1k", "1Ki", "0"])))
def test_whole_gpu_counts_as_parsed(value: Any) -> None:
    try:
        got: Any = legacy._whole(value, "container c: limits[nvidia.com/gpu]")
    except LegacyError as exc:
        got = str(exc)
    reference = _whole_reference(value, "")
    if type(reference) is int:
        assert got == reference and type(got) is int
    else:
        assert isinstance(got, str)


def _mapping_reference(cfg: RewriteConfig, resource: Any):
    """RewriteConfig.mapping_for without the prefix test done for all prefixes at once."""
    mapping = cfg._exact.get(resource)
    if mapping is not None:
        return mapping, ""
    for mapping in cfg._prefixed:
        profile = mapping.profile_of(resource)
        if profile is not None:
            return mapping, profile
    return None


CONFIGS = [config(), config(devices=[{"resourceName": "nvidia.com/gpu", "deviceClassName": "gpu.nvidia.com"}]),
           config(devices=[{"resourcePrefix": "nvidia.com/mig-", "deviceClassName": "mig.nvidia.com"},
                           {"resourcePrefix": "amd.com/", "deviceClassName": "gpu.amd.com", "requestName": "amd-${profile}"},
                           {"resourcePrefix": "nvidia.com/", "deviceClassName": "gpu.nvidia.com"}])]
NAMES = st.one_of(st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb.me",
                                   "nvidia.com/mig-", "amd.com/mi300", "nvidia.com/", "ephemeral-storage", "hugepages-2Mi"]),
                  st.text(alphabet="abcdimnortvg.-/1+", max_size=24),
                  st.from_regex(r"(nvidia\.com/|amd\.com/|nvidia\.com/mig-)[a-z0-9.+_-]{0,10}", fullmatch=True))


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from(range(len(CONFIGS))), NAMES)
def test_mapping_lookup_as_each_prefix_in_turn(which: int, resource: str) -> None:
    cfg = CONFIGS[which]
    assert cfg.mapping_for(resource) == _mapping_reference(cfg, resource)
    found = cfg.mapping_for(resource)
    if found is not None:
        mapping, profile = found
        assert mapping.request_for(profile) == mapping._request_for(profile)
        assert mapping.selectors_for(profile) == mapping._selectors_for(profile)
        assert mapping.request_for("") == mapping._request_for("")
        assert mapping.selectors_for("") == mapping._selectors_for("")


def test_a_key_that_is_no_text_fails_as_it_did() -> None:
    for cfg in CONFIGS:
        for resource in (1, None, 2.5):
            try:
                expected: Any = _mapping_reference(cfg, resource)
            except AttributeError as exc:
                expected = str(exc)
            try:
                got: Any = cfg.mapping_for(resource)  # type: ignore[arg-type]
            except AttributeError as exc:
                got = str(exc)
            assert got == expected


def _apply_reference(pod_: dict[str, Any], uses, claims) -> dict[str, Any]:
    """rewrite._apply as it was: every container of a changed list copied."""
    out = dict(pod_)
    spec = out["spec"] = dict(out["spec"])
    for field in {use.container.field for use in uses}:
        spec[field] = [dict(c) for c in spec[field]]
    by_container = {c.container: c for c in claims}
    for use in uses:
        ref = use.container
        container_ = spec[ref.field][ref.position]
        resources = rewrite._strip_legacy(container_, use)
        claim = by_container.get(ref)
        if claim is not None:
            resources["claims"] = list(resources.get("claims") or []) + [{"name": claim.claim}]
        if resources:
            container_["resources"] = resources
        else:
            container_.pop("resources", None)
    new = [c for c in claims if not c.reused]
    if new:
        spec["resourceClaims"] = list(spec.get("resourceClaims") or []) + [
            {"name": c.claim, "resourceClaimTemplateName": c.template} for c in new]
    return out


_LIMITS = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"]),
                          st.sampled_from(["0", "1", "2", "500m", "1Gi"]), max_size=3)
_CONTAINER = st.builds(lambda n, l, r, always: container(n, l, r, **({"restartPolicy": "Always"} if always else {})),
                       st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), _LIMITS), st.one_of(st.none(), _LIMITS),
                       st.booleans())


@settings(max_examples=400, deadline=None)
@given(st.lists(_CONTAINER, min_size=1, max_size=3), st.lists(_CONTAINER, max_size=2))
def test_the_rewrite_copies_only_what_it_changes(containers: list[dict[str, Any]], init: list[dict[str, Any]]) -> None:
    subject = pod(*containers, init=init)
    before = copy.deepcopy(subject)
    cfg = CONFIGS[0]
    try:
        uses = legacy_uses(subject, cfg)
    except LegacyError:
        return
    plan = plan_rewrite(subject, "jdoe", uses, cfg)
    reference = _apply_reference(subject, uses, plan.claims)
    assert plan.pod == reference and diff(subject, plan.pod) == diff(subject, reference)
    assert subject == before  # the input is never edited
    changed = {(u.container.field, u.container.position) for u in uses}
    for field in ("initContainers", "containers"):
        for index, item in enumerate(plan.pod["spec"].get(field) or []):
            assert (item is subject["spec"][field][index]) == ((field, index) not in changed)


def test_a_container_list_with_something_odd_is_copied_as_it_was() -> None:
    subject = pod(container("a", {"nvidia.com/gpu": "1"}))
    subject["spec"]["containers"].append("not a container")
    uses = legacy_uses(subject, CONFIGS[0])
    try:
        plan_rewrite(subject, "jdoe", uses, CONFIGS[0])
        raise AssertionError("dict() of a string fails, as it did")
    except ValueError:
        pass


def test_plain_labels_told_once_as_each_template_would() -> None:
    import datetime

    from webhook.platform.dra.config import TemplateSettings, plain_json

    for labels in ({"app.kubernetes.io/managed-by": "quartermaster"}, {}, {"a": 1.0}, {"a": datetime.date(2026, 1, 1)},
                   {1: "a"}, {"a": ["x", {"b": None}]}):
        assert TemplateSettings("qm", labels).plain_labels == plain_json(dict(labels))
