"""What the standalone path predicts for an input, and the check that the API server stored exactly that.

The prediction is `quartermaster apply` as a user runs it (same policies, the namespace as state). The API server
then defaults fields the prediction leaves out and the ServiceAccount admission plugin adds the token volume; every
field the prediction has must be stored with the same value, and every list it has must be stored with the same
length (so nothing added by the webhook is missing, and nothing the prediction lacks was added)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from tests.support import REPO

# added by the ServiceAccount admission plugin, with a random suffix
_TOKEN_VOLUME = "kube-api-access-"


@dataclass(frozen=True)
class Prediction:
    returncode: int
    objects: list[dict[str, Any]]
    table: str

    @property
    def admitted(self) -> dict[str, Any]:
        return self.objects[0]

    def created(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects[1:] if o.get("kind") == kind]


def predict(workdir: Path, namespace: Mapping[str, Any], *objects: Mapping[str, Any],
            policies: Path = REPO / "policies", state: tuple[Mapping[str, Any], ...] = ()) -> Prediction:
    """`quartermaster apply --policies P --state S FILE`: the admitted object as mutated, then what it creates."""
    workdir.mkdir(parents=True, exist_ok=True)
    state_dir = workdir / "state"
    state_dir.mkdir(exist_ok=True)
    (state_dir / "state.yaml").write_text(yaml.safe_dump_all([dict(namespace), *map(dict, state)]))
    resource = workdir / "resource.yaml"
    resource.write_text(yaml.safe_dump_all([dict(o) for o in objects]))
    result = subprocess.run([sys.executable, "-m", "webhook", "apply", f"--policies={policies}",
                             f"--state={state_dir}", "-o", "json", str(resource)],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode in (0, 1), result.stderr
    listed = json.loads(result.stdout)["items"] if result.stdout.strip() else []
    return Prediction(result.returncode, listed, result.stderr)


def _without_token_volume(items: list[Any]) -> list[Any]:
    return [i for i in items if not (isinstance(i, dict) and str(i.get("name", "")).startswith(_TOKEN_VOLUME))]


def stored_differences(predicted: Any, stored: Any, path: str = "") -> list[str]:
    """Where `stored` does not hold what `predicted` says (empty: it does)."""
    if isinstance(predicted, dict):
        if not isinstance(stored, dict):
            return [f"{path or '/'}: predicted an object, stored {stored!r}"]
        out: list[str] = []
        for key, value in predicted.items():
            if key not in stored:
                out.append(f"{path}/{key}: predicted {value!r}, not stored")
            else:
                out += stored_differences(value, stored[key], f"{path}/{key}")
        return out
    if isinstance(predicted, list):
        if not isinstance(stored, list):
            return [f"{path}: predicted a list, stored {stored!r}"]
        stored = _without_token_volume(stored)
        if len(predicted) != len(stored):
            return [f"{path}: predicted {len(predicted)} items, stored {len(stored)}: {stored!r}"]
        out = []
        for index, (p, s) in enumerate(zip(predicted, stored)):
            out += stored_differences(p, s, f"{path}/{index}")
        return out
    if predicted != stored and not _same_quantity(predicted, stored):
        return [f"{path}: predicted {predicted!r}, stored {stored!r}"]
    return []


def _same_quantity(predicted: Any, stored: Any) -> bool:
    # the API server keeps a quantity as it was written, but a YAML integer arrives as a number
    return isinstance(predicted, (int, float)) and str(predicted) == stored


def assert_stored_as_predicted(predicted: Mapping[str, Any], stored: Mapping[str, Any], *, fields: tuple[str, ...] = (
        "spec",)) -> None:
    for name in fields:
        problems = stored_differences(predicted.get(name), stored.get(name), f"/{name}")
        assert not problems, "the API server stored something else than the standalone path predicted:\n  " + \
            "\n  ".join(problems)
    for key in ("labels", "annotations"):
        expected = (predicted.get("metadata") or {}).get(key) or {}
        problems = stored_differences(expected, (stored.get("metadata") or {}).get(key) or {}, f"/metadata/{key}")
        assert not problems, "\n  ".join(problems)
