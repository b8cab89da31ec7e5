"""The record of claims the scheduler created: by uid, one per pod, bounded."""

from webhook.state.claim_authors import AuthoredClaim, ClaimAuthors


def made(name, uid, pod_uid="pod-1", namespace="jdoe"):
    return AuthoredClaim(namespace, name, uid, pod_uid)


def test_a_claim_is_the_schedulers_only_under_the_uid_it_was_created_with():
    authors = ClaimAuthors()
    assert authors.record(made("c", "u1"), exists=lambda other: True)
    assert authors.created_by_scheduler("jdoe", "c", "u1")
    assert not authors.created_by_scheduler("jdoe", "c", "u2") and not authors.created_by_scheduler("jdoe", "c", "")
    assert not authors.created_by_scheduler("alice", "c", "u1")


def test_one_claim_per_pod_while_the_first_exists():
    authors = ClaimAuthors()
    assert authors.record(made("a", "u1"), exists=lambda other: True)
    assert not authors.record(made("b", "u2"), exists=lambda other: True)
    assert not authors.created_by_scheduler("jdoe", "b", "u2")
    assert authors.record(made("b", "u2"), exists=lambda other: False)  # the first is gone: a retry
    assert authors.created_by_scheduler("jdoe", "b", "u2") and not authors.created_by_scheduler("jdoe", "a", "u1")


def test_without_a_uid_or_an_owner_nothing_is_recorded():
    authors = ClaimAuthors()
    assert not authors.record(made("c", ""), exists=lambda other: True)
    assert not authors.record(made("c", "u1", pod_uid=""), exists=lambda other: True)
    assert len(authors) == 0


def test_forget_takes_back_only_that_claim_and_the_record_is_bounded():
    authors = ClaimAuthors(limit=2)
    authors.record(made("a", "u1", "p1"), exists=lambda other: True)
    authors.forget("jdoe", "a", uid="other")
    assert authors.created_by_scheduler("jdoe", "a", "u1")
    authors.forget("jdoe", "a", uid="u1")
    assert not authors.created_by_scheduler("jdoe", "a", "u1")
    for i in range(5):
        authors.record(made(f"c{i}", f"u{i}", f"p{i}"), exists=lambda other: True)
    assert len(authors) == 2 and authors.created_by_scheduler("jdoe", "c4", "u4")
