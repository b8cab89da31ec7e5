"""Go value semantics the Kyverno engine depends on."""

import pytest

from webhook.families.kyverno.gotypes import parse_duration, sprint, wildcard_match
from webhook.families.kyverno.images import parse_image
from webhook.families.kyverno.jp_time import format_duration


@pytest.mark.parametrize("text,nanos", [("0", 0), ("1h30m", 5400 * 10**9), ("1.5s", 1_500_000_000), ("-2m", -120 * 10**9),
                                        ("300ms", 300_000_000), ("1h0m0s", 3600 * 10**9)])
def test_parse_duration(text, nanos):
    assert parse_duration(text) == nanos


@pytest.mark.parametrize("text", ["1", "", "1d", "h", "1.5"])
def test_not_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_duration_strings_round_trip_as_go_prints_them():
    assert [format_duration(parse_duration(t)) for t in ("90m", "1.5s", "300ms", "0")] == ["1h30m0s", "1.5s", "300ms", "0s"]


def test_sprint_and_wildcards():
    assert [sprint(v) for v in (2.0, 2.5, True, None, [1, "a"])] == ["2", "2.5", "true", "<nil>", "[1 a]"]
    assert wildcard_match("nginx:*", "nginx:1") and wildcard_match("a?c", "abc") and not wildcard_match("a[b]", "ab")


def test_image_references():
    assert parse_image("nginx")["reference"] == "docker.io/nginx:latest"
    image = parse_image("localhost:5000/team/app@sha256:abc")
    assert (image["registry"], image["path"], image["tag"], image["digest"]) == ("localhost:5000", "team/app", "", "sha256:abc")


def test_star_patterns_match_as_the_regular_expression_does():
    """Patterns of `*` alone are matched by string search (RE2's wrapper cost ~5 us a call, several per rule):
    every pattern and text over a small alphabet, up to lengths 5 and 6, agrees with the RE2 reading."""
    import itertools

    from webhook.families.kyverno.gotypes import _wildcard_regex

    def words(alphabet, longest):
        return ("".join(w) for n in range(longest + 1) for w in itertools.product(alphabet, repeat=n))

    texts = list(words("ab", 6)) + ["a\nb", "Pod", "", "ééa"]
    checked = 0
    for pattern in words("ab*", 5):
        if "*" not in pattern:
            continue
        expected = _wildcard_regex(pattern)
        for text in texts:
            assert wildcard_match(pattern, text) is (expected.fullmatch(text) is not None), (pattern, text)
            checked += 1
    assert checked > 20_000
    assert wildcard_match("*", "") and wildcard_match("*/Pod", "v1/Pod") and not wildcard_match("a*a", "a")
