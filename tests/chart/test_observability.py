"""The chart's Grafana dashboard (optional) uses only metrics the webhook exposes and the README documents;
the NOTES say where audit results go and how to move to enforcement."""

from __future__ import annotations

import json
import re

from prometheus_client.parser import text_string_to_metric_families

from tests.chart.support import VARIANTS, render
from tests.kinds import pod
from tests.support import REPO, pid, review
from webhook.model.results import Action, failed
from webhook.model.review import parse_review
from webhook.observability.metrics import Metrics

METRIC = re.compile(r"\b((?:quartermaster|process)_[a-z_]+)\b")


def exposed_names() -> set[str]:
    """Sample names of a real exposition after every kind of event was counted once."""
    metrics = Metrics()
    request = parse_review(json.dumps(review(pod())).encode())
    metrics.admission("validate", "CREATE", "Pod", "denied", 0.01)
    metrics.rule_results(request, [failed(pid("p"), "r", "no", Action.AUDIT)])
    metrics.malformed("validate", 400)
    metrics.report_dropped()
    metrics.policy_load(1, 1)
    metrics.loop_lag(0.003)
    metrics.connection_closed("idle")
    text = metrics.exposition().decode()
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}


def dashboard(values=None) -> dict:
    (config,) = [c for c in render(values).of_kind("ConfigMap") if c["metadata"]["name"].endswith("-dashboard")]
    return config


def test_dashboard_is_off_by_default():
    assert not [c for c in render().of_kind("ConfigMap") if c["metadata"]["name"].endswith("-dashboard")]


def test_dashboard_uses_only_exposed_and_documented_metrics():
    config = dashboard(VARIANTS["grafana-dashboard"])
    assert config["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config["metadata"]["annotations"] == {"grafana_folder": "Platform"}
    board = json.loads(config["data"]["quartermaster.json"])
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in METRIC.findall(e)}
    assert len(board["panels"]) >= 10 and len(used) >= 12
    exposed, readme = exposed_names(), (REPO / "README.md").read_text()
    for name in used:
        assert name in exposed, f"the dashboard queries {name}, which /metrics does not expose"
        base = re.sub(r"_(total|bucket|count|sum)$", "", name)
        assert f"`{base}" in readme, f"{base} is not documented in README.md"
    for name in exposed:  # and every exposed metric is documented
        assert f"`{re.sub(r'_(total|bucket|count|sum)$', '', name)}" in readme, f"{name} is not in README.md"
    assert {"build_info", "process_resident_memory_bytes", "process_open_fds"} <= {m.replace("quartermaster_", "") for m in used}


def test_notes_say_where_audit_results_go_and_how_to_enforce():
    notes = render().notes
    assert "kubectl get policyreports -A" in notes and "quartermaster report" in notes
    assert "--set policyReports.installCRDs=true" in notes  # the CRDs are needed without Kyverno
    assert "installCRDs" not in render(VARIANTS["policy-reports"]).notes
    audit = render({"auditOnly": True}).notes
    assert "AUDIT-ONLY" in audit and "--set auditOnly=false" in audit
    assert "AUDIT-ONLY" not in notes
