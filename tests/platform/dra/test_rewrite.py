"""The pieces of the rewrite on their own: legacy amounts, user choices, claim names, templates."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tests.support import assert_valid_k8s
from webhook.cel import CelCompiler
from webhook.platform.dra.choices import resolve_choices
from webhook.platform.dra.config import ModelOption, RewriteConfig, TemplateSettings, UserChoices
from webhook.platform.dra.legacy import LegacyError, legacy_uses
from webhook.platform.dra.compile import compile_config
from webhook.platform.dra.rewrite import plan_rewrite
from webhook.platform.dra.templates import DeviceRequest, build_template, claim_spec

SPEC = {"devices": [{"resourceName": "nvidia.com/gpu", "deviceClassName": "gpu.nvidia.com", "userChoices": True},
                    {"resourcePrefix": "nvidia.com/mig-", "deviceClassName": "mig.nvidia.com",
                     "profileSuffixes": {".me": "+me"},
                     "selectors": ["device.attributes['gpu.nvidia.com'].profile == '${profile}'"]}]}


def config(**changes) -> RewriteConfig:
    return compile_config({**SPEC, **changes}, CelCompiler())


def pod(*containers, init=(), claims=None, name="p"):
    spec = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if claims is not None:
        spec["resourceClaims"] = claims
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "jdoe"}, "spec": spec}


def container(name, limits=None, requests=None, **extra):
    resources = {}
    if limits is not None:
        resources["limits"] = limits
    if requests is not None:
        resources["requests"] = requests
    return {"name": name, "image": "python:3.12", "resources": resources, **extra}


# --- legacy amounts -------------------------------------------------------------------------------
def test_only_mapped_keys_count_and_requests_alone_are_read():
    uses = legacy_uses(pod(container("a", limits={"cpu": "1", "amd.com/gpu": 1}),
                           container("b", requests={"nvidia.com/gpu": "2"})), config())
    assert [(u.container.name, [(a.resource, a.count) for a in u.amounts]) for u in uses] == [("b", [("nvidia.com/gpu", 2)])]


@pytest.mark.parametrize("value, words", [("500m", "GPUs come whole"), ("-1", "GPUs come whole"),
                                          ("lots", "not a quantity"), ("1.5", "GPUs come whole")])
def test_amounts_that_are_not_whole_gpus_are_refused(value, words):
    with pytest.raises(LegacyError, match=words):
        legacy_uses(pod(container("a", limits={"nvidia.com/gpu": value})), config())


def test_sidecars_and_regular_init_containers_are_told_apart():
    uses = legacy_uses(pod(container("app", limits={"nvidia.com/gpu": 1}),
                           init=[container("side", limits={"nvidia.com/gpu": 1}, restartPolicy="Always"),
                                 container("once", limits={"nvidia.com/gpu": 1})]), config())
    refs = {u.container.name: u.container for u in uses}
    assert refs["side"].sidecar and not refs["side"].regular_init
    assert refs["once"].regular_init and not refs["app"].regular_init
    assert [u.container.name for u in uses] == ["side", "once", "app"]  # pod order, init containers first


# --- mappings ---------------------------------------------------------------------------------------
def test_prefix_needs_a_valid_profile_and_exact_names_win():
    cfg = config(devices=SPEC["devices"] + [{"resourceName": "nvidia.com/mig-7g.80gb", "deviceClassName": "big.example.com"}])
    assert cfg.mapping_for("nvidia.com/mig-7g.80gb")[0].device_class == "big.example.com"
    assert cfg.mapping_for("nvidia.com/mig-1g.10gb.me")[1] == "1g.10gb+me"
    assert cfg.mapping_for("nvidia.com/mig-") is None and cfg.mapping_for("nvidia.com/mig-.x") is None


# --- user choices ------------------------------------------------------------------------------------
CHOICES = UserChoices(model_annotation="q/model", memory_annotation="q/memory",
                      models=(ModelOption("a100", "", ("sel-a100",), Fraction(40 * 2**30)),),
                      memory_selector="mem >= '${memory}'", memory_maximum=Fraction(80 * 2**30))


def test_choices_become_selectors_and_user_text_is_only_a_checked_quantity():
    outcome = resolve_choices({"q/model": " A100 ", "q/memory": "20480Mi"}, CHOICES)
    assert outcome.error == "" and outcome.selectors == ("sel-a100", "mem >= '20480Mi'")
    assert resolve_choices({"q/memory": "40Gi' || true || '"}, CHOICES).error.startswith("annotation q/memory:")


@pytest.mark.parametrize("annotations, words", [
    ({"q/model": "v100"}, "use one of: a100"),
    ({"q/memory": "0"}, "more than zero"),
    ({"q/memory": "81Gi"}, "at most 80Gi"),
    ({"q/model": "a100", "q/memory": "41Gi"}, "more than GPU model a100 has (40Gi)"),
])
def test_choices_outside_the_offer_are_refused(annotations, words):
    assert words in resolve_choices(annotations, CHOICES).error


def test_a_platform_without_choices_refuses_the_annotations():
    plain = UserChoices(model_annotation="q/model", memory_annotation="q/memory")
    assert "offers no choice of GPU model" in resolve_choices({"q/model": "a100"}, plain).error
    assert "offers no choice of GPU memory" in resolve_choices({"q/memory": "1Gi"}, plain).error


# --- claims and templates -------------------------------------------------------------------------
def test_long_and_clashing_claim_names_stay_valid_and_unique():
    long_name = "c" * 63
    original = pod(container(long_name, limits={"nvidia.com/gpu": 1}), container("x", limits={"nvidia.com/gpu": 1}),
                   claims=[{"name": "gpu-x", "resourceClaimName": "mine"}])
    plan = plan_rewrite(original, "jdoe", legacy_uses(original, config()), config())
    names = [c["name"] for c in plan.pod["spec"]["resourceClaims"]]
    assert names[0] == "gpu-x" and len(set(names)) == 3 and all(len(n) <= 63 for n in names)
    assert "gpu-x-2" in names
    assert_valid_k8s(plan.pod)


def test_dedicated_init_claims_never_borrow():
    original = pod(container("app", limits={"nvidia.com/gpu": 1}), init=[container("once", limits={"nvidia.com/gpu": 1})])
    reuse = plan_rewrite(original, "jdoe", legacy_uses(original, config()), config())
    dedicated_cfg = config(initContainerClaims="Dedicated")
    dedicated = plan_rewrite(original, "jdoe", legacy_uses(original, dedicated_cfg), dedicated_cfg)
    assert len(reuse.pod["spec"]["resourceClaims"]) == 1 and [c.reused for c in reuse.claims] == [True, False]
    assert len(dedicated.pod["spec"]["resourceClaims"]) == 2 and not any(c.reused for c in dedicated.claims)


def test_a_sidecar_claim_is_never_lent_to_an_init_container():
    original = pod(container("app", image="x"),
                   init=[container("side", limits={"nvidia.com/gpu": 1}, restartPolicy="Always"),
                         container("once", limits={"nvidia.com/gpu": 1})])
    plan = plan_rewrite(original, "jdoe", legacy_uses(original, config()), config())
    assert [c["name"] for c in plan.pod["spec"]["resourceClaims"]] == ["gpu-side", "gpu-once"]


def test_template_names_follow_content_not_namespace_or_key_order():
    settings = TemplateSettings("qm", {"app.kubernetes.io/managed-by": "quartermaster"})
    one = build_template([DeviceRequest("nvidia.com/gpu", "gpu", "gpu.nvidia.com", 1)], "a", settings)
    same = build_template([DeviceRequest("nvidia.com/gpu", "gpu", "gpu.nvidia.com", 1)], "b", settings)
    two = build_template([DeviceRequest("nvidia.com/gpu", "gpu", "gpu.nvidia.com", 2)], "a", settings)
    assert one["metadata"]["name"] == same["metadata"]["name"] != two["metadata"]["name"]
    assert one["metadata"]["namespace"] == "a" and same["metadata"]["namespace"] == "b"
    a = pod(container("m", limits={"nvidia.com/gpu": 1, "nvidia.com/mig-1g.5gb": 1}))
    b = pod(container("m", limits={"nvidia.com/mig-1g.5gb": 1, "nvidia.com/gpu": 1}))
    plans = [plan_rewrite(p, "jdoe", legacy_uses(p, config()), config()) for p in (a, b)]
    assert plans[0].templates == plans[1].templates


def test_request_names_are_unique_inside_a_claim():
    spec = claim_spec([DeviceRequest("x/a.b", "a-b", "c.example.com", 1), DeviceRequest("x/a-b", "a-b", "c.example.com", 1)])
    assert [r["name"] for r in spec["devices"]["requests"]] == ["a-b", "a-b-2"]

