import pytest

from tests.families.cel.formcheck import form_checked
from tests.families.cel.shadow import shadowed


@pytest.fixture(autouse=True)
def fast_path_agrees_with_reference():
    """Every ValidatingPolicy evaluation of these tests also runs through the fast path; they must agree. And
    every value a Python form tells is the runtime's own (formcheck.py)."""
    with shadowed() as shadow, form_checked() as forms:
        yield shadow
    assert not shadow.mismatches, shadow.mismatches[:3]
    assert not forms.mismatches, forms.mismatches[:3]


@pytest.fixture
def forms_checked(fast_path_agrees_with_reference):
    """The form check of the running test (for its counts); the autouse fixture asserts its agreement."""
    from tests.families.cel import formcheck

    return formcheck.CURRENT[-1]
