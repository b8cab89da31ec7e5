import pytest

from tests.cel_family.shadow import shadowed


@pytest.fixture(autouse=True)
def fast_path_agrees_with_reference():
    """Every ValidatingPolicy evaluation of these tests also runs through the fast path; they must agree."""
    with shadowed() as shadow:
        yield shadow
    assert not shadow.mismatches, shadow.mismatches[:3]
