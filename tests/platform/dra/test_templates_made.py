"""Templates made once per policy and shared by the pods of a namespace (rewrite.template_for) are exactly the
templates built for each pod (templates.build_template), byte for byte and key for key, and nothing on the way
to the cluster state edits them; and the small GPU counts read without the quantity regex are read as the
quantity parser reads them."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from tests.platform.dra.test_rewrite import config
from webhook.model.quantity import parse_quantity, plain_whole
from webhook.platform.dra import rewrite
from webhook.platform.dra.legacy import ContainerRef, LegacyAmount, LegacyUse
from webhook.platform.dra.rewrite import device_requests, template_for
from webhook.platform.dra.templates import build_template

_SHARING = {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}}
CONFIGS = [
    config(),
    config(devices=[{"resourcePrefix": "nvidia.com/mig-", "deviceClassName": "mig.nvidia.com", "sharing": _SHARING},
                    {"resourceName": "nvidia.com/gpu", "deviceClassName": "gpu.nvidia.com", "userChoices": True,
                     "sharing": {"strategy": "TimeSlicing"}}]),
    config(devices=[{"resourcePrefix": "amd.com/", "deviceClassName": "gpu.amd.com", "requestName": "amd-${profile}"},
                    {"resourcePrefix": "nvidia.com/", "deviceClassName": "gpu.nvidia.com"}],
           templates={"namePrefix": "t", "labels": {"team": "ml", "a/b": "~x\"y", "é": "ü"}}),
]
RESOURCES = st.sampled_from(["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb.me", "amd.com/mi300",
                             "nvidia.com/a100"])
AMOUNTS = st.lists(st.builds(LegacyAmount, RESOURCES, st.one_of(st.integers(0, 3), st.integers(0, 2**70))),
                   min_size=1, max_size=3, unique_by=lambda a: a.resource).map(
    lambda amounts: tuple(sorted(amounts, key=lambda a: a.resource)))
CHOSEN = st.lists(st.sampled_from(["device.attributes['gpu.nvidia.com'].productName == 'A100'",
                                   "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", "x\\\"é"]),
                  max_size=2)
NAMESPACES = st.sampled_from(["jdoe", "ml-team", "", "a" * 63])


def _mapped(cfg, amounts) -> tuple[LegacyAmount, ...]:
    return tuple(a for a in amounts if cfg.mapping_for(a.resource) is not None)


def _expected(use: LegacyUse, cfg, chosen, namespace: str) -> Any:
    requests = device_requests(use, cfg, chosen)
    return build_template(requests, namespace, cfg.templates) if requests else None


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(range(len(CONFIGS))), st.lists(st.tuples(AMOUNTS, CHOSEN, NAMESPACES), min_size=1, max_size=6))
def test_a_template_made_once_is_the_template_built_for_each_pod(which: int, pods: list[Any]) -> None:
    cfg = CONFIGS[which]
    ref = ContainerRef("containers", 0, "nb")
    for amounts, chosen, namespace in pods:
        amounts = _mapped(cfg, amounts)
        if not amounts:
            continue
        use = LegacyUse(ref, amounts)
        first = template_for(use, cfg, chosen, namespace)
        for _ in range(2):  # made (or made for an earlier pod), then the same one again
            got = template_for(use, cfg, chosen, namespace)
            expected = _expected(use, cfg, chosen, namespace)
            assert json.dumps(got) == json.dumps(expected)  # key order too (orjson stops at 64 bits)
            assert got == expected
            assert got is first  # shared by the namespace's pods that ask for the same
            if got is not None:
                assert list(got["metadata"]) == list(expected["metadata"])


def test_what_is_kept_is_bounded() -> None:
    cfg = config()
    cfg.templates_made.clear()
    ref = ContainerRef("containers", 0, "nb")
    for count in range(3 * rewrite.TEMPLATES_KEPT):
        use = LegacyUse(ref, (LegacyAmount("nvidia.com/gpu", count),))
        assert template_for(use, cfg, (), "jdoe") == _expected(use, cfg, (), "jdoe")
        assert len(cfg.templates_made) <= rewrite.TEMPLATES_KEPT


def test_no_device_asked_for_makes_no_template() -> None:
    cfg = config()
    use = LegacyUse(ContainerRef("containers", 0, "nb"), (LegacyAmount("nvidia.com/gpu", 0),))
    assert template_for(use, cfg, (), "jdoe") is None and template_for(use, cfg, (), "jdoe") is None


def test_small_whole_counts_read_as_parsed() -> None:
    for n in range(300):
        for text in (str(n), f" {n}", f"{n} ", f"0{n}", f"{n}m", f"{n}k", f"{n}.0", f"+{n}"):
            whole = plain_whole(text)
            if whole is not None:
                amount = parse_quantity(text)
                assert amount.denominator == 1 and whole == int(amount) and type(whole) is int
        assert plain_whole(str(n)) == n


class _Text(str):
    pass


def test_text_of_another_type_takes_the_general_path() -> None:
    assert plain_whole(_Text("1")) is None  # as before: only str itself is read plainly
    assert plain_whole(1) is None and plain_whole(True) is None
