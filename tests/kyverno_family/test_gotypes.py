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
