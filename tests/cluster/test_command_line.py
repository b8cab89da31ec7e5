"""`python -m tests.cluster install DIR --set KEY=VALUE`: the site's chart values, spelt as helm's --set spells them
(docs/deploy.md's real run uses them), become the values the chart is rendered with; a malformed one is refused."""

from __future__ import annotations

import argparse

import pytest

from tests.chart.support import render
from tests.cluster.__main__ import chart_values_set


def test_set_values_nest_as_helm_nests_them_and_reach_the_rendered_policies() -> None:
    values = chart_values_set(argparse.ArgumentParser(), ["image.repository=registry.example.org/quartermaster",
                                                          "notebook.issuer=https://idp.example.org/realms/x"])
    assert values == {"image": {"repository": "registry.example.org/quartermaster"},
                      "notebook": {"issuer": "https://idp.example.org/realms/x"}}
    policy = render(values).one("ConfigMap")["data"]["notebook-injection.yaml"]
    assert "image: registry.example.org/quartermaster:" in policy
    assert "--issuer=https://idp.example.org/realms/x" in policy


@pytest.mark.parametrize("setting", ["image.repository", "=x"])
def test_a_setting_without_key_and_value_is_refused(setting: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        chart_values_set(argparse.ArgumentParser(prog="python -m tests.cluster"), [setting])
    assert exit_.value.code == 2 and "expected KEY=VALUE" in capsys.readouterr().err
