"""YAML that aliases or nesting blow up is refused from its node graph, in time linear in the text."""

import time

import pytest
import yaml

from webhook.model import boundedyaml

# nine lines, 200 bytes: 9^9 (387 million) strings once every alias is expanded
BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))


def test_alias_bomb_is_refused_at_once_with_the_line_of_the_repeated_node():
    started = time.perf_counter()
    with pytest.raises(yaml.YAMLError, match="excessive aliasing") as info:
        boundedyaml.safe_load(BOMB)
    assert time.perf_counter() - started < 0.5
    assert info.value.problem_mark.line + 1 == 8  # h: &h [...], repeated nine times in i


@pytest.mark.parametrize("text", ["&a [*a]", "a: &a {b: *a}", "- &x [1, [2, *x]]"])
def test_data_that_contains_itself_is_refused(text):
    with pytest.raises(yaml.YAMLError, match="recursive data"):
        boundedyaml.safe_load(text)
    with pytest.raises(yaml.YAMLError, match="recursive data"):
        boundedyaml.safe_load_all(text, yaml.SafeLoader)


def test_deep_nesting_is_refused_quickly():
    started = time.perf_counter()
    for depth in (101, 900, 50_000):
        with pytest.raises(yaml.YAMLError):
            boundedyaml.safe_load("[" * depth + "]" * depth)
    assert time.perf_counter() - started < 0.5  # PyYAML's own reader took 0.5-1.5 s for each


def test_ordinary_anchors_and_documents_load_as_pyyaml_loads_them():
    text = "base: &b {image: x, env: [{name: A, value: '1'}]}\none: *b\ntwo: {<<: *b, image: y}\n---\n---\nk: [1, 2.5, null, true]\n"
    assert boundedyaml.safe_load_all(text) == list(yaml.safe_load_all(text))
    assert boundedyaml.safe_load("a: 1") == {"a": 1} and boundedyaml.safe_load("") is None
    reuse = "x: &x {" + ", ".join(f"k{i}: {i}" for i in range(20)) + "}\nlist: [" + ", ".join(["*x"] * 150) + "]\n"
    assert len(boundedyaml.safe_load(reuse)["list"]) == 150  # ~6,000 nodes of reuse: within the bound
