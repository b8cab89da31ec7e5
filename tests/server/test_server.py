"""The real HTTPS server: protocol, bad input, TLS, timeouts, health, metrics, hot reload."""

import asyncio
import json
import ssl

import aiohttp
import pytest

from tests.kinds import ADD_ZONE, REQUIRE_TEAM, pod, test_registry
from tests.support import apply_patch, assert_valid_k8s, decode_patch, eventually, policy_dir, review, running_server


@pytest.fixture
def policies(tmp_path):
    return policy_dir(tmp_path / "policies", {"require.yaml": REQUIRE_TEAM, "add.yaml": ADD_ZONE})


def serve(policies, tmp_path, **kw):
    return running_server(policies, tmp_path, registry=test_registry(), **kw)


async def test_mutate_returns_escaped_patch_that_applies(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        original = pod(labels={"app": "x"})
        response = await server.admit("/mutate", review(original))
        assert response["allowed"] is True
        ops = decode_patch(response)
        assert ops == [{"op": "add", "path": "/metadata/labels/example.org~1zone~0a", "value": "b"}]
        patched = apply_patch(original, ops)
        assert patched["metadata"]["labels"]["example.org/zone~a"] == "b"
        assert_valid_k8s(patched)


async def test_validate_denies_with_message_and_allows(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        denied = await server.admit("/validate", review(pod()))
        assert denied["allowed"] is False and denied["status"]["code"] == 403
        assert "add the label team" in denied["status"]["message"] and "require-team" in denied["status"]["message"]
        assert "patch" not in denied
        allowed = await server.admit("/validate", review(pod(labels={"team": "a"})))
        assert allowed == {"uid": allowed["uid"], "allowed": True}


async def test_audit_mode_warns_and_annotates(tmp_path):
    directory = tmp_path / "p"
    directory.mkdir()
    (directory / "r.yaml").write_text(REQUIRE_TEAM + "  mode: Audit\n")
    async with serve(directory, tmp_path) as server:
        response = await server.admit("/validate", review(pod()))
        assert response["allowed"] is True
        assert response["warnings"] == ["require-team: add the label team"]
        assert response["auditAnnotations"] == {"require-team.has-label": "add the label team"}


@pytest.mark.parametrize("raw", [b"garbage", b"{}", b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}',
                                 json.dumps(review(pod(), operation="EXPLODE")).encode(), b""])
async def test_bad_input_gets_400_and_server_keeps_serving(policies, tmp_path, raw):
    async with serve(policies, tmp_path) as server:
        status, body = await server.post("/validate", None, raw=raw)
        assert status == 400 and body["error"]
        ok = await server.admit("/validate", review(pod(labels={"team": "a"})))
        assert ok["allowed"] is True


async def test_a_bug_costs_one_request_a_500_and_the_server_goes_on(policies, tmp_path, monkeypatch):
    async with serve(policies, tmp_path) as server:
        engine = server.qm.engine
        real = engine.validate

        async def broken(request, budget=9.0, **kw):
            if request.uid == "boom":
                raise KeyError("a bug")
            return await real(request, budget, **kw)

        monkeypatch.setattr(engine, "validate", broken)
        status, body = await server.post("/validate", None, raw=json.dumps(review(pod(), uid="boom")).encode())
        assert status == 500 and body == {"error": "internal error; see the webhook's logs"}
        ok = await server.admit("/validate", review(pod(labels={"team": "a"})))
        assert ok["allowed"] is True


async def test_huge_body_refused(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        big = review(pod(annotations_blob="x"))
        big["request"]["object"]["metadata"]["annotations"] = {"blob": "x" * (3 * 1024 * 1024 + 10)}
        status, body = await server.post("/validate", big)
        assert status == 413 and "3 MiB" in body["error"]
        assert (await server.get("/healthz"))[0] == 200


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
async def test_only_tls12_and_newer(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        old = ssl.create_default_context(cafile=str(server.ca))
        old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        old.maximum_version = ssl.TLSVersion.TLSv1_1
        try:
            old.set_ciphers("ALL:@SECLEVEL=0")
        except ssl.SSLError:
            pass
        port = int(server.url.rsplit(":", 1)[1])
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=old, server_hostname="localhost")
            writer.close()
        modern = ssl.create_default_context(cafile=str(server.ca))
        modern.maximum_version = ssl.TLSVersion.TLSv1_2
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=modern, server_hostname="localhost")
        assert writer.get_extra_info("ssl_object").version() == "TLSv1.2"
        writer.close()


async def test_untrusted_client_fails(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        async with aiohttp.ClientSession() as plain:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await plain.get(server.url + "/healthz")


async def test_timeout_query_is_honoured_with_failure_policy(tmp_path):
    directory = tmp_path / "p"
    directory.mkdir()
    (directory / "slow-ignore.yaml").write_text(REQUIRE_TEAM.replace("require-team", "slow-ignore") + "  sleepSeconds: 5\n  failurePolicy: Ignore\n")
    async with serve(directory, tmp_path) as server:
        body = review(pod(labels={"team": "a"}))
        # the API server gives up after its timeout: answer inside it, or the answer is worthless
        async with server.session.post(server.url + "/validate?timeout=2s", json=body,
                                       timeout=aiohttp.ClientTimeout(total=2)) as resp:
            answer = (await resp.json())["response"]
        assert answer["allowed"] is True and "could not be evaluated (timed out)" in answer["warnings"][0]
    (directory / "slow-ignore.yaml").write_text(REQUIRE_TEAM.replace("require-team", "slow-fail") + "  sleepSeconds: 5\n")
    async with serve(directory, tmp_path / "2") as server:
        async with server.session.post(server.url + "/validate?timeout=2s", json=body,
                                       timeout=aiohttp.ClientTimeout(total=2)) as resp:
            answer = (await resp.json())["response"]
        assert answer["allowed"] is False and "timed out" in answer["status"]["message"]


async def test_raising_policy_follows_failure_policy(tmp_path):
    directory = tmp_path / "p"
    directory.mkdir()
    (directory / "r.yaml").write_text(REQUIRE_TEAM + "  raise: true\n  failurePolicy: Ignore\n")
    async with serve(directory, tmp_path) as server:
        answer = await server.admit("/validate", review(pod()))
        assert answer["allowed"] is True and "RuntimeError: boom" in answer["warnings"][0]


async def test_health_ready_metrics(policies, tmp_path):
    state = tmp_path / "state"  # a namespace labels its own series only when the state holds it
    state.mkdir()
    (state / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: jdoe}\n")
    async with serve(policies, tmp_path, state=state) as server:
        assert await server.get("/healthz") == (200, "ok\n")
        status, text = await server.get("/readyz")
        ready = json.loads(text)
        assert status == 200 and ready["status"] == "ready" and ready["policiesLoaded"] and ready["stateSynced"]
        await server.admit("/validate", review(pod()))
        await server.admit("/mutate", review(pod()))
        await server.post("/validate", None, raw=b"junk")
        status, metrics = await server.get("/metrics")
        assert status == 200
        assert 'quartermaster_admission_requests_total{endpoint="validate",kind="Pod",operation="CREATE",verdict="denied"} 1.0' in metrics
        assert 'quartermaster_admission_requests_total{endpoint="mutate",kind="Pod",operation="CREATE",verdict="allowed"} 1.0' in metrics
        assert ('quartermaster_policy_results_total{mode="enforce",policy="require-team",policy_kind="RequireLabel",'
                'resource_kind="Pod",resource_namespace="jdoe",result="fail",rule="has-label"} 1.0') in metrics
        assert 'quartermaster_admission_duration_seconds_bucket{endpoint="validate",le="0.005"}' in metrics
        assert 'quartermaster_malformed_requests_total{endpoint="validate",status="400"} 1.0' in metrics
        assert "quartermaster_policy_load_failing 0.0" in metrics


async def test_bad_reload_keeps_serving_and_shows_error(policies, tmp_path):
    async with serve(policies, tmp_path) as server:
        (policies / "require.yaml").write_text(REQUIRE_TEAM + "  nonsense: true\n")

        async def degraded():
            return json.loads((await server.get("/readyz"))[1])["status"] == "degraded"

        await eventually(degraded)
        ready = json.loads((await server.get("/readyz"))[1])
        assert "require.yaml:7" in ready["policyErrors"][0] and "spec.nonsense" in ready["policyErrors"][0]
        assert "quartermaster_policy_load_failing 1.0" in (await server.get("/metrics"))[1]
        assert "quartermaster_policy_load_errors_total 1.0" in (await server.get("/metrics"))[1]
        denied = await server.admit("/validate", review(pod()))  # the previous policies still serve
        assert denied["allowed"] is False


async def test_hot_reload_under_concurrent_requests(policies, tmp_path):
    """Policies swap while requests stream in: no request fails, each sees one whole snapshot."""
    async with serve(policies, tmp_path) as server:
        stop = asyncio.Event()
        answers = []

        async def client():
            while not stop.is_set():
                answers.append(await server.admit("/validate", review(pod(labels={"team": "a"}))))

        clients = [asyncio.create_task(client()) for _ in range(8)]
        for generation in range(6):
            label = "team" if generation % 2 else "owner"
            (policies / "require.yaml").write_text(REQUIRE_TEAM.replace("label: team", f"label: {label}"))
            target = server.qm.store.snapshot.generation + 1

            async def swapped():
                return server.qm.store.snapshot.generation >= target

            await eventually(swapped)
        stop.set()
        await asyncio.gather(*clients)
        assert len(answers) > 50
        allowed = [a for a in answers if a["allowed"]]
        denied = [a for a in answers if not a["allowed"]]
        assert allowed and denied  # both policies were in force at some point
        assert all("add the label owner" in a["status"]["message"] for a in denied)
