"""The decision's shortcuts answer as the plain forms: `_above` as Fraction's `>`, a Limit's rendered texts as
gpus_text and format_bytes of its amount."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings, strategies as st

from webhook.model.quantity import format_bytes
from webhook.platform.quota.check import _above, gpus_text
from webhook.platform.quota.limits import Limit

AMOUNTS = st.one_of(st.fractions(), st.integers(-10**20, 10**20).map(Fraction), st.sampled_from([Fraction(0), Fraction(1)]))


@settings(max_examples=2000, deadline=None)
@given(AMOUNTS, AMOUNTS)
def test_above_is_greater_than(amount, other):
    assert _above(amount, other) is (amount > other)
    assert _above(amount, amount) is False


@given(st.integers(-3, 3), st.fractions(min_value=0, max_value=10**6))
def test_above_of_other_numbers_falls_back_to_their_comparison(whole, amount):
    assert _above(whole, amount) == (whole > amount)
    assert _above(amount, whole) == (amount > whole)


@given(st.one_of(st.fractions(min_value=0, max_value=10**15), st.integers(0, 2**63).map(Fraction)))
def test_a_limit_renders_its_amount_as_the_messages_did(amount):
    limit = Limit(amount, "class personal")
    assert limit.as_gpus == gpus_text(amount) and limit.as_bytes == format_bytes(amount)
    assert limit == Limit(amount, "class personal") and hash(limit) == hash(Limit(amount, "class personal"))


def test_a_template_memo_entry_stands_for_that_template_object_only():
    """Claim templates' GPUs are remembered per stored object: a replaced template (even under the same name,
    or a new dict at the same address) is counted again, and the memo stays bounded."""
    from webhook.platform.quota import usage
    from webhook.platform.quota.objects import ProfileObjects
    from tests.platform.quota.builders import compiled, device_request, pod, seeded_state, template

    rules = compiled().settings.rules
    state = seeded_state(template("t1", "jdoe", device_request(1)), pod("nb", templates={"gpu": "t1"}))
    assert usage.measure(ProfileObjects.read(state, "jdoe"), rules).gpus == 1
    state.record_admitted(template("t1", "jdoe", device_request(3)), "CREATE")
    assert usage.measure(ProfileObjects.read(state, "jdoe"), rules).gpus == 3
    for count in range(1, 40):  # fresh dicts, often at an address a freed one had
        objects = ProfileObjects.read(seeded_state(template("t1", "jdoe", device_request(count % 4 + 1))), "jdoe")
        assert usage._template_gpus(objects, "t1", rules, []).gpus == count % 4 + 1
    memo = rules.template_memo
    memo.update({-i: (None, None) for i in range(usage.TEMPLATE_MEMO_LIMIT)})
    objects = ProfileObjects.read(seeded_state(template("t1", "jdoe", device_request(2))), "jdoe")
    assert usage._template_gpus(objects, "t1", rules, []).gpus == 2
    assert len(memo) == 1
