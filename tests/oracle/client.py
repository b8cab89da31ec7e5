"""One celoracle process per test session: JSON requests in, typed answers out, one line each (see main.go)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

from tests.go_builds import cached_build
from tests.oracle.typed import Typed, from_oracle
from webhook.model.quickinit import frozen_dataclass

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"


class OracleMissing(RuntimeError):
    """The oracle binary is not built; the message says how to build it."""


def binary() -> Path:
    return cached_build(BUILD, OracleMissing, "the Kubernetes CEL oracle",
                        "Go 1.24+; cached by the hash of go.mod, go.sum and its sources")


@frozen_dataclass
class OracleAnswer:
    value: Typed | None      # None when it is an error
    error: str = ""          # "compile" | "runtime" | "" (a value)
    message: str = ""


class CelOracle:
    """Kubernetes' answer for an expression. env: "validating" (ValidatingAdmissionPolicy) or "mutating"
    (MutatingAdmissionPolicy, patch types declared); mode: "stored" (what the API server evaluates) or "new"
    (what it admits in a policy created at its compatibility version)."""

    def __init__(self, path: Path) -> None:
        self._process = subprocess.Popen([str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self._lock = threading.Lock()
        self.asked = 0

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        with self._lock:
            self._process.stdin.write(json.dumps(request, default=str) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the CEL oracle exited (code {self._process.poll()})")
        return json.loads(line)

    def info(self) -> dict[str, Any]:
        return self._ask({"info": True})

    def evaluate(self, expression: str, bindings: Mapping[str, Any] | None = None,
                 variables: Sequence[tuple[str, str]] = (), env: str = "validating",
                 mode: str = "stored") -> OracleAnswer:
        request = {"expression": expression, "env": env, "mode": mode,
                   "variables": [{"name": n, "expression": e} for n, e in variables],
                   "bindings": {k: v for k, v in (bindings or {}).items() if v is not None}}
        answer = self._ask(request)
        self.asked += 1
        if answer.get("error") == "request":
            raise ValueError(f"the oracle could not read the request: {answer.get('message')}")
        if answer.get("error"):
            return OracleAnswer(None, answer["error"], answer.get("message", ""))
        return OracleAnswer(from_oracle(answer["value"]))

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
