"""`--cel-evaluation` and `validate --explain`: each policy's evaluation route, as an operator sees and sets it."""

from __future__ import annotations

import pytest

from tests.families.cel.test_fused import VALIDATIONS, named, policy
from tests.families.cel.test_fused_group import GROUP
from tests.support import REPO
from webhook.cli import main
from webhook.commandline import CEL_EVALUATION_ENV


def _policies(tmp_path):
    path = tmp_path / "policies"
    path.mkdir()
    (path / "group.yaml").write_text(GROUP)
    selector = policy(VALIDATIONS).replace("    resourceRules:", "    objectSelector: {matchLabels: {a: b}}\n    resourceRules:")
    (path / "selector.yaml").write_text(named("selector", selector))
    return path


def _routes(out: str) -> dict[str, str]:
    """policy -> its route, from the --explain lines (`file#doc: Kind/name: route: why`)."""
    lines = [line.split(": ", 3) for line in out.splitlines()]
    return {parts[1]: parts[2] for parts in lines}


def test_explain_prints_every_policys_route_and_why(tmp_path, capsys):
    assert main(["validate", "--explain", str(_policies(tmp_path)), str(REPO / "policies")]) == 0
    out = capsys.readouterr().out
    routes = _routes(out)
    assert routes == {"ValidatingPolicy/host-network": "fused-group", "ValidatingPolicy/labelled": "fused-group",
                      "ValidatingPolicy/message": "fused-group", "ValidatingPolicy/scan-only": "fused-group",
                      "ValidatingPolicy/selector": "fused", "ProfileQuota/profile-quota": "reference",
                      "NotebookInjection/notebook-home-and-token": "reference",
                      "DeviceClaimRewrite/device-claim-rewrite": "reference"}
    assert "selector.yaml#0: ValidatingPolicy/selector: fused: its own fused program" in out
    assert "matches on more than the resource and operation" in out


def test_without_explain_validate_prints_no_routes(tmp_path, capsys):
    assert main(["validate", str(_policies(tmp_path))]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("how", ["option", "environment"])
def test_the_reference_setting_puts_every_cel_policy_on_the_reference_route(tmp_path, capsys, monkeypatch, how):
    argv = ["validate", "--explain", str(_policies(tmp_path))]
    if how == "option":
        argv.insert(1, "--cel-evaluation=reference")
    else:
        monkeypatch.setenv(CEL_EVALUATION_ENV, "reference")
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert set(_routes(out).values()) == {"reference"} and len(_routes(out)) == 5
    assert all("forced" in line for line in out.splitlines())


def test_a_wrong_setting_is_refused_naming_the_option_and_the_variable(tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as exited:
        main(["validate", "--cel-evaluation=fast", str(tmp_path)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--cel-evaluation" in err and "'fast' is not one of default, reference" in err
    monkeypatch.setenv(CEL_EVALUATION_ENV, "off")
    for command in ("validate", "test", "apply", "serve"):
        with pytest.raises(SystemExit) as exited:
            main([command, str(tmp_path)])
        assert exited.value.code == 2
        assert CEL_EVALUATION_ENV in capsys.readouterr().err
