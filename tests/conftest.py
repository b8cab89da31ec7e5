import pytest

from tests.support import REPO


@pytest.fixture
def repo_policies():
    return REPO / "policies"
