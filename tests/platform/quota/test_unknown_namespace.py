"""Issue 39, finding 8: a namespace missing from the cluster state (not seeded, not delivered by the informer
yet) used to skip the quota: its labels could not say it is a profile, so the policy did not match, and a pod
asking for any number of GPUs was admitted. Under failurePolicy Fail it is refused, saying why."""

from tests.platform.quota.builders import policy_text, pod, pvc, seeded_state
from tests.support import policy_dir, review, running_server


async def test_a_pod_in_a_namespace_the_webhook_does_not_know_is_refused(tmp_path):
    policies = policy_dir(tmp_path / "policies", {"quota.yaml": policy_text()})
    state = seeded_state()
    async with running_server(policies, tmp_path, qm_state=state) as server:
        greedy = await server.admit("/validate", review(pod("trainer", "fresh", gpus=5)))
        assert greedy["allowed"] is False and greedy["status"]["code"] == 403
        assert "does not know namespace 'fresh' yet" in greedy["status"]["message"]
        assert (await server.admit("/validate", review(pvc("data", "fresh", size="5Ti"))))["allowed"] is False
        assert state.list("Pod", "fresh") == [] and state.list("PersistentVolumeClaim", "fresh") == []
        # a namespace the state knows and that is no profile is still not the quota's business
        assert (await server.admit("/validate", review(pod("web", "default", gpus=5))))["allowed"]


async def test_failure_policy_ignore_admits_and_reports(tmp_path):
    policies = policy_dir(tmp_path / "policies", {"quota.yaml": policy_text(failurePolicy="Ignore")})
    async with running_server(policies, tmp_path, qm_state=seeded_state()) as server:
        response = await server.admit("/validate", review(pod("trainer", "fresh", gpus=5)))
        assert response["allowed"] is True


async def test_a_namespace_the_policy_excludes_by_its_selector_is_not_refused(tmp_path):
    """Only the namespace selector is unknowable for a missing namespace: the rest of the match still applies."""
    policies = policy_dir(tmp_path / "policies", {"quota.yaml": policy_text(objectSelector={"matchLabels": {"team": "ml"}})})
    async with running_server(policies, tmp_path, qm_state=seeded_state()) as server:
        assert (await server.admit("/validate", review(pod("trainer", "fresh", gpus=5))))["allowed"]
