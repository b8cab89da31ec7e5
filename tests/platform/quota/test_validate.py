"""ProfileQuota through the engine: decisions, messages, bypasses, Audit mode, dry run."""

import pytest

from tests.platform.quota.builders import (build, claim, device_request, first_available, kf_profile, policy_text, pod,
                                           pvc, request, seeded_state, template)
from tests.support import assert_valid_k8s


async def admit(qm, obj, **kw):
    assert_valid_k8s(obj)
    return await qm.engine.validate(request(obj, **kw))


# --- GPUs ------------------------------------------------------------------------------------------
async def test_personal_profile_gets_one_gpu_and_the_denial_explains(tmp_path):
    qm = build(tmp_path)
    assert (await admit(qm, pod("nb-a", gpus=1))).allowed
    verdict = await admit(qm, pod("train", gpus=1))
    assert not verdict.allowed and verdict.code == 403
    message = verdict.message
    for words in ("GPU quota exceeded in profile 'jdoe'", "limit 1 GPU (class personal)", "in use 1 (Pod nb-a: 1)",
                  "this Pod train asks for 1 more", "Stop a notebook", "kubectl get pods,resourceclaims -n jdoe"):
        assert words in message, (words, message)
    assert qm.state.get("Pod", "jdoe", "train") is None
    assert (await admit(qm, pod("cpu-only"))).allowed  # no GPUs, nothing to refuse


async def test_a_request_that_can_never_fit_says_so_instead_of_stop_a_notebook(tmp_path):
    qm = build(tmp_path)
    verdict = await admit(qm, pod("big", gpus=2))  # nothing running in jdoe's profile: nothing to stop
    assert not verdict.allowed
    for words in ("limit 1 GPU (class personal), nothing else in use", "this Pod big asks for 2 more",
                  "can never fit: ask for at most 1 GPU", "ask the platform team to raise the limit"):
        assert words in verdict.message, (words, verdict.message)
    assert "Stop a notebook" not in verdict.message
    volume = await admit(qm, pvc("huge", "jdoe", "40Gi"))
    assert not volume.allowed
    assert "nothing else in use" in volume.message and "can never fit: ask for at most 30Gi" in volume.message
    assert "Delete volumes" not in volume.message
    # once something else holds some, the advice to free it is right again
    assert (await admit(qm, pvc("data", "jdoe", "20Gi"))).allowed
    more = await admit(qm, pvc("more", "jdoe", "20Gi"))
    assert "Delete volumes" in more.message and "never fit" not in more.message


async def test_team_profile_gets_eight(tmp_path):
    qm = build(tmp_path)
    for i in range(4):
        assert (await admit(qm, pod(f"w{i}", "ml-team", gpus=2))).allowed
    verdict = await admit(qm, pod("extra", "ml-team", gpus=1))
    assert not verdict.allowed and "limit 8 GPUs (class team)" in verdict.message


async def test_the_denial_lists_a_few_holders_and_how_many_more(tmp_path):
    qm = build(tmp_path)
    for i in range(5):
        assert (await admit(qm, pod(f"w{i}", "ml-team", gpus=1))).allowed
    assert (await admit(qm, pod("big", "ml-team", gpus=3))).allowed
    verdict = await admit(qm, pod("one-more", "ml-team", gpus=1))
    assert "(Pod big: 3, Pod w0: 1, Pod w1: 1 and 3 more)" in verdict.message


async def test_profile_override_applies(tmp_path):
    qm = build(tmp_path, state=seeded_state(kf_profile("jdoe", {"requests.nvidia.com/gpu": "2"})))
    assert (await admit(qm, pod("a", gpus=2))).allowed
    verdict = await admit(qm, pod("b", gpus=1))
    assert not verdict.allowed and "limit 2 GPUs (Profile jdoe)" in verdict.message


async def test_terminal_pods_make_room(tmp_path):
    qm = build(tmp_path, state=seeded_state(pod("old", gpus=1, phase="Succeeded")))
    assert (await admit(qm, pod("new", gpus=1))).allowed


async def test_legacy_and_dra_add_up(tmp_path):
    qm = build(tmp_path, state=seeded_state(template("one", "ml-team", device_request(4))))
    assert (await admit(qm, pod("a", "ml-team", gpus=4, templates={"gpu": "one"}))).allowed
    verdict = await admit(qm, pod("b", "ml-team", gpus=1))
    assert not verdict.allowed and "in use 8" in verdict.message


# --- DRA bypasses ----------------------------------------------------------------------------------
async def test_a_large_template_may_exist_but_a_pod_using_it_is_refused(tmp_path):
    qm = build(tmp_path)
    big = template("eight", "jdoe", device_request(8))
    assert (await admit(qm, big)).allowed  # templates themselves are not charged
    qm.state.record_admitted(big, "CREATE")
    verdict = await admit(qm, pod("nb", templates={"gpu": "eight"}))
    assert not verdict.allowed and "asks for 8 more" in verdict.message


async def test_a_claim_is_checked_when_created(tmp_path):
    qm = build(tmp_path)
    verdict = await admit(qm, claim("two", "jdoe", device_request(2)))
    assert not verdict.allowed and "this ResourceClaim two asks for 2 more" in verdict.message
    assert (await admit(qm, claim("one", "jdoe", device_request(1)))).allowed
    assert (await admit(qm, pod("a", claims={"gpu": "one"}))).allowed  # the claim is charged already
    assert (await admit(qm, pod("b", claims={"gpu": "one"}))).allowed  # and shared, still once
    assert not (await admit(qm, pod("c", gpus=1))).allowed


async def test_first_available_counts_its_largest_choice(tmp_path):
    qm = build(tmp_path)
    verdict = await admit(qm, claim("c", "jdoe", first_available(device_request(1), device_request(2, "mig.nvidia.com"))))
    assert not verdict.allowed and "asks for 2 more" in verdict.message


async def test_allocation_mode_all_never_fits(tmp_path):
    qm = build(tmp_path)
    verdict = await admit(qm, claim("all", "ml-team", device_request(mode="All")))
    assert not verdict.allowed
    assert "every matching device (allocationMode: All)" in verdict.message and "exact count" in verdict.message


async def test_the_generated_claim_of_an_admitted_pod_is_not_charged_twice(tmp_path):
    qm = build(tmp_path, state=seeded_state(template("one", "jdoe", device_request(1))))
    p = pod("nb", templates={"gpu": "one"}, uid="8d3e2f5a-0000-4000-8000-000000000001")
    assert (await admit(qm, p)).allowed
    generated = claim("nb-gpu-7xk2p", "jdoe", device_request(1), owner_pod=p, pod_claim="gpu")
    assert (await admit(qm, generated, username="system:serviceaccount:kube-system:resourceclaim-controller")).allowed
    assert not (await admit(qm, pod("other", gpus=1))).allowed  # and still charged once


async def test_a_template_recreated_bigger_under_a_pending_pod_is_refused(tmp_path):
    qm = build(tmp_path, state=seeded_state(template("t", "jdoe", device_request(1))))
    p = pod("nb", templates={"gpu": "t"}, uid="8d3e2f5a-0000-4000-8000-000000000002")
    assert (await admit(qm, p)).allowed
    # before Kubernetes generates the pod's claim, the template is deleted and created again with 8 GPUs
    qm.state.record_deleted("ResourceClaimTemplate", "jdoe", "t")
    verdict = await admit(qm, template("t", "jdoe", device_request(8)))
    assert not verdict.allowed
    assert "this ResourceClaimTemplate t would charge the pods that use it 8 more" in verdict.message
    assert "(Pod nb:" not in verdict.message  # without its template the pod holds nothing


async def test_a_pod_whose_template_is_missing_counts_the_rest_and_warns(tmp_path):
    qm = build(tmp_path)
    verdict = await admit(qm, pod("nb", templates={"gpu": "not-yet"}), dry_run=True)
    assert verdict.allowed
    assert "claim template not-yet not found: its GPUs count once it exists" in verdict.warnings
    assert qm.state.get("Pod", "jdoe", "nb") is None  # dry run records nothing
    denied = await admit(qm, pod("nb2", gpus=2, templates={"gpu": "not-yet"}), dry_run=True)
    assert not denied.allowed and "asks for 2 more" in denied.message  # what can be known is still checked


async def test_a_template_created_after_the_pod_that_uses_it_is_checked(tmp_path):
    qm = build(tmp_path)
    p = pod("nb", templates={"gpu": "later"}, uid="8d3e2f5a-0000-4000-8000-000000000003")
    verdict = await admit(qm, p)
    assert verdict.allowed  # its template does not exist: nothing to charge yet
    assert verdict.warnings == ("claim template later not found: its GPUs count once it exists",)
    denied = await admit(qm, template("later", "jdoe", device_request(4)))
    assert not denied.allowed and "would charge the pods that use it 4 more" in denied.message
    assert (await admit(qm, template("small", "jdoe", device_request(4)))).allowed  # nobody uses that one
    assert (await admit(qm, template("later", "jdoe", device_request(1)))).allowed


# --- storage ---------------------------------------------------------------------------------------
async def test_pvcs_count_against_storage(tmp_path):
    qm = build(tmp_path)
    assert (await admit(qm, pvc("data", size="20Gi"))).allowed
    verdict = await admit(qm, pvc("more", size="20Gi"))
    assert not verdict.allowed
    for words in ("Storage quota exceeded in profile 'jdoe'", "limit 30Gi (class personal)",
                  "in use 20Gi (PersistentVolumeClaim data: 20Gi)", "asks for 20Gi more", "kubectl get pvc -n jdoe"):
        assert words in verdict.message, (words, verdict.message)
    assert (await admit(qm, pvc("small", size="10Gi"))).allowed


async def test_a_resize_is_checked_and_other_updates_pass_when_over_quota(tmp_path):
    qm = build(tmp_path, state=seeded_state(pvc("data", size="20Gi")))
    old = qm.state.get("PersistentVolumeClaim", "jdoe", "data")
    grown = pvc("data", size="40Gi")
    grown["metadata"] = dict(old["metadata"])
    verdict = await admit(qm, grown, operation="UPDATE", old=old)
    assert not verdict.allowed
    assert "this update of PersistentVolumeClaim data asks for 20Gi more (40Gi in total)" in verdict.message
    assert (await admit(qm, {**grown, "spec": {**grown["spec"], "resources": {"requests": {"storage": "25Gi"}}}},
                        operation="UPDATE", old=old)).allowed
    # the platform team lowered the limit: the profile is over it, but a label change adds nothing
    over = build(tmp_path / "over", state=seeded_state(pvc("data", size="20Gi"),
                                                       kf_profile("jdoe", {"requests.storage": "10Gi"})))
    old = over.state.get("PersistentVolumeClaim", "jdoe", "data")
    relabelled = {**old, "metadata": {**old["metadata"], "labels": {"keep": "yes"}}}
    assert (await admit(over, relabelled, operation="UPDATE", old=old)).allowed


async def test_generic_ephemeral_volumes_count(tmp_path):
    qm = build(tmp_path, state=seeded_state(pvc("data", size="25Gi")))
    verdict = await admit(qm, pod("nb", ephemeral={"scratch": "10Gi"}))
    assert not verdict.allowed and "this Pod nb asks for 10Gi more" in verdict.message
    p = pod("nb2", ephemeral={"scratch": "5Gi"}, uid="8d3e2f5a-0000-4000-8000-000000000004")
    assert (await admit(qm, p)).allowed
    # the ephemeral volume controller then creates the PVC: already charged through the pod
    assert (await admit(qm, pvc("nb2-scratch", size="5Gi", owner_pod=p))).allowed


async def test_storage_classes_not_listed_are_free(tmp_path):
    qm = build(tmp_path, policy_text(storage={"storageClassNames": ["block"]}))
    assert (await admit(qm, pvc("shared", size="500Gi", storage_class="cephfs"))).allowed
    assert not (await admit(qm, pvc("disk", size="31Gi", storage_class="block"))).allowed


# --- modes, scope ----------------------------------------------------------------------------------
async def test_audit_mode_admits_warns_annotates_and_reports(tmp_path):
    qm = build(tmp_path, policy_text(mode="Audit"), state=seeded_state(pod("nb-a", gpus=1)))
    verdict = await admit(qm, pod("train", gpus=1))
    assert verdict.allowed
    # the warning kubectl prints is short and whole; the annotation and the report keep the full message
    assert verdict.warnings == ("profile-quota: over GPU quota in 'jdoe' (1 in use + 1 > 1); kubectl get polr -n jdoe",)
    assert len(verdict.warnings[0]) <= 120
    assert "GPU quota exceeded" in verdict.audit_annotations["profile-quota.gpu-quota"]
    assert "Stop a notebook" in verdict.audit_annotations["profile-quota.gpu-quota"]
    reported = [e for e in qm.sink.entries if e.result.outcome.value == "fail"]
    assert [(e.resource.name, e.result.rule) for e in reported] == [("train", "gpu-quota")]
    assert qm.state.get("Pod", "jdoe", "train") is not None


async def test_passing_results_report_the_usage(tmp_path):
    qm = build(tmp_path)
    verdict = await admit(qm, pod("nb", gpus=1, ephemeral={"scratch": "5Gi"}))
    messages = {r.rule: r.message for r in verdict.results}
    assert messages == {"gpu-quota": "this Pod nb fits: profile 'jdoe' at 1 GPU of 1 GPU with it (class personal)",
                        "storage-quota": "this Pod nb fits: profile 'jdoe' at 5Gi of 30Gi with it (class personal)"}


async def test_a_pass_that_adds_nothing_does_not_read_like_a_violation(tmp_path):
    qm = build(tmp_path, state=seeded_state(pvc("home", size="35Gi")))
    verdict = await admit(qm, pod("cpu-only"))
    messages = {r.rule: (r.outcome.value, r.message) for r in verdict.results}
    assert messages["storage-quota"] == (
        "pass", "this Pod cpu-only adds no storage (profile 'jdoe' at 35Gi of 30Gi, class personal)")
    assert messages["gpu-quota"] == ("pass", "this Pod cpu-only adds no GPUs (profile 'jdoe' at 0 GPUs of 1 GPU, class personal)")


async def test_namespaces_that_are_not_profiles_are_not_checked(tmp_path):
    qm = build(tmp_path)
    verdict = await admit(qm, pod("big", "default", gpus=16))
    assert verdict.allowed and verdict.results == ()


@pytest.mark.parametrize("operation", ["DELETE"])
async def test_deletes_are_not_checked(tmp_path, operation):
    qm = build(tmp_path, state=seeded_state(pod("a", gpus=1), pod("b", gpus=1)))  # already over
    verdict = await qm.engine.validate(request(None, operation=operation, old=pod("a", gpus=1), namespace="jdoe"))
    assert verdict.allowed and verdict.results == ()


async def test_a_scan_blames_the_excess_once_on_the_newest_objects(tmp_path):
    from webhook.engine.scan import scan
    from webhook.reports.sink import MemoryResultSink

    older, newer = pvc("home", size="20Gi"), pvc("datasets", size="15Gi")
    older["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    newer["metadata"]["creationTimestamp"] = "2026-02-01T00:00:00Z"
    first, second = pod("train", gpus=1), pod("eval", gpus=1)
    first["metadata"]["creationTimestamp"], second["metadata"]["creationTimestamp"] = "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"
    qm = build(tmp_path, state=seeded_state(older, newer, first, second))
    sink = MemoryResultSink()
    await scan(qm.store, qm.state, sink, namespace="jdoe")
    outcomes = {(e.resource.name, e.result.rule): (e.result.outcome.value, e.result.message) for e in sink.entries}
    assert outcomes[("home", "storage-quota")][0] == "pass" and outcomes[("train", "gpu-quota")][0] == "pass"
    assert outcomes[("datasets", "storage-quota")][0] == "fail" and outcomes[("eval", "gpu-quota")][0] == "fail"
    assert "in use 20Gi (PersistentVolumeClaim home: 20Gi)" in outcomes[("datasets", "storage-quota")][1]
    assert outcomes[("train", "storage-quota")] == (
        "pass", "this Pod train adds no storage (profile 'jdoe' at 35Gi of 30Gi, class personal)")
