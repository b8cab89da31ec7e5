"""YAML that aliases or nesting blow up is refused from its node graph, in work linear in the text."""

import pytest
import yaml

from tests.work import lines_run
from webhook.model import boundedyaml

# Python lines run per character of text: the graph is measured once per node (about 2,500 lines for the
# bomb below, whose expansion has 387 million nodes) and libyaml composes in C (about 25 lines per character
# of deep nesting, where PyYAML's own reader runs 800 at 101 levels and more the deeper it goes).
LINES_PER_CHARACTER = 50

# nine lines, 200 bytes: 9^9 (387 million) strings once every alias is expanded
BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))


def test_alias_bomb_is_refused_at_once_with_the_line_of_the_repeated_node():
    with pytest.raises(yaml.YAMLError, match="excessive aliasing") as info:
        boundedyaml.safe_load(BOMB)
    assert lines_run(lambda: boundedyaml.safe_load(BOMB)) < LINES_PER_CHARACTER * len(BOMB)
    assert info.value.problem_mark.line + 1 == 8  # h: &h [...], repeated nine times in i


@pytest.mark.parametrize("text", ["&a [*a]", "a: &a {b: *a}", "- &x [1, [2, *x]]"])
def test_data_that_contains_itself_is_refused(text):
    with pytest.raises(yaml.YAMLError, match="recursive data"):
        boundedyaml.safe_load(text)
    with pytest.raises(yaml.YAMLError, match="recursive data"):
        boundedyaml.safe_load_all(text, yaml.SafeLoader)


@pytest.mark.parametrize("depth", [101, 900, 50_000])
def test_deep_nesting_is_refused_in_linear_work(depth):
    text = "[" * depth + "]" * depth
    with pytest.raises(yaml.YAMLError):
        boundedyaml.safe_load(text)
    assert lines_run(lambda: boundedyaml.safe_load(text)) < LINES_PER_CHARACTER * len(text)


def test_ordinary_anchors_and_documents_load_as_pyyaml_loads_them():
    text = "base: &b {image: x, env: [{name: A, value: '1'}]}\none: *b\ntwo: {<<: *b, image: y}\n---\n---\nk: [1, 2.5, null, true]\n"
    assert boundedyaml.safe_load_all(text) == list(yaml.safe_load_all(text))
    assert boundedyaml.safe_load("a: 1") == {"a": 1} and boundedyaml.safe_load("") is None
    reuse = "x: &x {" + ", ".join(f"k{i}: {i}" for i in range(20)) + "}\nlist: [" + ", ".join(["*x"] * 150) + "]\n"
    assert len(boundedyaml.safe_load(reuse)["list"]) == 150  # ~6,000 nodes of reuse: within the bound
