"""The charging table of docs/quota.md, row by row, through the real HTTPS server in standalone mode."""

import json

import pytest

from tests.platform.quota.bypass_table import expected_admissions, placed, probe, profile, rows
from tests.support import REPO, review, running_server

ROWS = rows()


def test_the_docs_table_lists_every_row():
    text = (REPO / "docs" / "quota.md").read_text()
    missing = [row.name for row in ROWS if f"| {row.name} |" not in text]
    assert not missing, missing




async def check_rows(server) -> list[str]:
    wrong = []
    for index, row in enumerate(ROWS):
        for gpus, admitted in expected_admissions(row):
            response = await server.admit("/validate", review(probe(f"row-{index:02d}", gpus), dry_run=True))
            if response["allowed"] is not admitted:
                wrong.append(f"{row.name}: a {gpus}-GPU pod was {'admitted' if response['allowed'] else 'refused'}"
                             f" ({response.get('status', {}).get('message', '')})")
    return wrong


async def test_every_shape_is_charged_as_documented(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    objects = [profile(i) for i in range(len(ROWS))] + [placed(o, i) for i, row in enumerate(ROWS) for o in row.objects]
    (state / "objects.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    async with running_server(REPO / "policies", tmp_path, state=state) as server:
        assert await check_rows(server) == []


async def test_out_of_range_quantities_are_refused_naming_the_field(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "ns.yaml").write_text(json.dumps(profile(0)))
    async with running_server(REPO / "policies", tmp_path, state=state) as server:
        greedy = probe("row-00", 1)
        greedy["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1e99999999"}}}}}}]
        response = await server.admit("/validate", review(greedy))
        assert response["allowed"] is False and 400 <= response["status"]["code"] < 500
        message = response["status"]["message"]
        assert "spec.volumes[0].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]" in message
        assert "out of range" in message
        gpus = probe("row-00", 1)
        gpus["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1e99999999"
        response = await server.admit("/validate", review(gpus))
        assert response["allowed"] is False and "spec.containers[0].resources.limits[nvidia.com/gpu]" in response["status"]["message"]
