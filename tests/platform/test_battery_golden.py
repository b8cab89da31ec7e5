"""The batteries answer exactly as the reference code did over our cases (see battery_golden.py):
patches as JSON text, messages, warnings, every rule result field, created objects."""

from __future__ import annotations

import json

from tests.platform.battery_golden import GOLDEN, snapshot


def test_batteries_answer_as_recorded() -> None:
    golden = json.loads(GOLDEN.read_text())
    got = json.loads(json.dumps(snapshot(), sort_keys=True))
    assert sorted(got) == sorted(golden)
    differ = {name: {part: sorted(k for k in got[name][part] if got[name][part][k] != golden[name][part].get(k))
                     for part in got[name] if isinstance(got[name][part], dict) and got[name][part] != golden[name][part]}
              if "first" in got[name] else sorted(k for k in got[name] if got[name][k] != golden[name].get(k))
              for name in got if got[name] != golden[name]}
    assert not differ, f"answers changed (scenario: fields): {differ}"
