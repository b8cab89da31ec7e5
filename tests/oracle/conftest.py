"""The Kubernetes CEL oracle, one process per test session (per pytest-xdist worker). Absent binary: the tests
skip with the command that builds it, or fail under CI (CI=true), where .ci/run builds it first."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from tests.oracle.client import CelOracle, OracleMissing, binary


@pytest.fixture(scope="session")
def cel_oracle() -> Iterator[CelOracle]:
    try:
        path = binary()
    except OracleMissing as error:
        if os.environ.get("CI"):
            pytest.fail(str(error))
        pytest.skip(str(error))
    oracle = CelOracle(path)
    yield oracle
    oracle.close()
