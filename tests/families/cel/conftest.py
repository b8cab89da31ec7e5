import pytest

from tests.families.cel.shadow import shadowed
from tests.families.cel.trimcheck import trim_checked


@pytest.fixture(autouse=True)
def fast_path_agrees_with_reference():
    """Every ValidatingPolicy evaluation of these tests also runs through the fast path; they must agree. And
    every fused program also runs on the whole and the trimmed object (trimcheck.py): they must agree too."""
    with shadowed() as shadow, trim_checked() as trims:
        yield shadow
    assert not shadow.mismatches, shadow.mismatches[:3]
    assert not trims.mismatches, trims.mismatches[:3]


@pytest.fixture
def trims_checked(fast_path_agrees_with_reference):
    """The trim check of the running test (for its counts); the autouse fixture asserts its agreement."""
    from tests.families.cel import trimcheck

    return trimcheck.CURRENT[-1]
