"""libyaml's reader (webhook/policy/documents.py fast_nodes) against PyYAML's own, the reference: where the fast
reader answers, its documents and node lines are the reference's; everywhere else it gives way (None)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

import webhook.policy.documents as documents
from webhook.apply import BadInput, read_resources
from webhook.policy.documents import DocumentError, fast_nodes, read_documents, safe_load_all
from tests.support import REPO

CORPUS = REPO.parent.parent / "shared" / "conformance"
MUTATIONS = list(":-?[]{},#&*!|>'\"%@`\n \\") + ["\n  ", ": ", "- ", "---\n", "...\n", "|", ">-", "!!str ", "&a ", "*a", "? "]


def _reference(text: str) -> list[tuple[Any, Any]]:
    loader = yaml.SafeLoader(text)
    out = []
    try:
        while loader.check_node():
            node = loader.get_node()
            out.append((node, loader.construct_document(node) if node is not None else None))
    finally:
        loader.dispose()
    return out


def _lines(node: Any) -> list[tuple[str, int]]:
    """Every node's kind and start line, depth first: what Document.line_of reads."""
    out, stack = [], [node]
    while stack:
        node = stack.pop()
        out.append((type(node).__name__, node.start_mark.line))
        if isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in reversed(node.value) for n in reversed(pair))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    return out


def _agrees(text: str) -> bool | None:
    """None: the fast reader gave way; True: it answered as the reference does. Fails on any difference."""
    fast = fast_nodes(text)
    if fast is None:
        return None
    reference = _reference(text)  # raises when the fast reader accepted what the reference refuses
    assert len(fast) == len(reference)
    for (node, data), (ref_node, ref_data) in zip(fast, reference):
        assert repr(data) == repr(ref_data)
        if data is not None:  # an empty document's null node is never read
            assert _lines(node) == _lines(ref_node)
    return True


def _yaml_files() -> list[Path]:
    own = [p for p in REPO.rglob("*.y*ml") if not {".venv", "node_modules"} & set(p.parts)]
    corpus = sorted(CORPUS.rglob("*.yaml")) if CORPUS.is_dir() else []
    return sorted(own) + random.Random(12).sample(corpus, min(len(corpus), 250))


def test_every_yaml_file_reads_as_the_reference_reads_it():
    answered = 0
    for path in _yaml_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        try:
            answered += bool(_agrees(text))
        except Exception as exc:  # pragma: no cover - the message names the file
            raise AssertionError(f"{path}: {exc!r}") from exc
    assert answered > 100


def test_mutated_yaml_reads_as_the_reference_reads_it_or_gives_way():
    rng = random.Random(7)
    texts = [p.read_text() for p in sorted((REPO / "policies").glob("*.yaml"))] + \
            [p.read_text() for p in sorted((REPO / "examples").glob("*.yaml"))]
    outcomes = {None: 0, True: 0}
    for _ in range(800):
        chars = list(rng.choice(texts))
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(chars))
            if rng.random() < 0.5:
                chars.insert(pos, rng.choice(MUTATIONS))
            else:
                chars[pos] = rng.choice(MUTATIONS)
        outcomes[_agrees("".join(chars))] += 1
    assert outcomes[None] > 50 and outcomes[True] > 50, outcomes


@pytest.mark.parametrize("text", [
    "a:\tb\n",                              # libyaml accepts a tab after "key:"; PyYAML refuses it
    "a: >#comment\n  x\n",                  # and a comment right after a block scalar header
    "%YAML 1.1\n---\na: 1\n",               # directives
    "a: 1\r\nb: 2\r\n",                     # other line breaks: lines are counted by the reference
    "a: " + "[" * 100 + "]" * 100 + "\n",   # deeper than _FAST_DEPTH
    "a: [\n",                               # any error
    "a: *unknown\n",
    "a: b\n? c",                            # an explicit key: libyaml puts its empty value on another line
    "- ? v\n",
    "a: {b: C? d}\n",                      # "? " in a flow collection: libyaml reads a plain scalar, PyYAML refuses
])
def test_what_the_fast_reader_is_not_trusted_with_goes_to_the_reference(text):
    assert fast_nodes(text) is None


def test_errors_are_the_reference_readers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cases = {"syntax.yaml": "a: 1\nb: [\n", "tab.yaml": "kind: X\nspec:\tvalue\n", "second.yaml": "a: 1\n---\nb: : :\n",
             "deep.yaml": "a: " + "[" * 1500 + "]" * 1500 + "\n", "explicit.yaml": "a: b\n? c"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)

    def outcome(name: str) -> Any:
        got: list[Any] = []
        try:
            for doc in read_documents(tmp_path / name, name):
                got.append((doc.index, doc.data))
        except DocumentError as exc:
            got.append((exc.file, exc.index, exc.line, exc.message))
        return got

    fast = {name: outcome(name) for name in cases}
    monkeypatch.setattr(documents, "_FAST_LOADER", None)
    assert fast == {name: outcome(name) for name in cases}
    assert "nested too deeply" in str(fast["deep.yaml"]) and "invalid YAML" in str(fast["tab.yaml"])


def test_safe_load_all_is_yaml_safe_load_all():
    for text in ["a: 1\n---\n---\nb: [1, 2]\n", "", "# only a comment\n", "- 2001-12-14\n- !!binary aGVsbG8=\n"]:
        assert safe_load_all(text) == list(yaml.safe_load_all(text))
    with pytest.raises(yaml.YAMLError):
        safe_load_all("a: [\n")


def test_apply_input_errors_are_unchanged(tmp_path: Path):
    bad = tmp_path / "pod.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [x\n")
    with pytest.raises(BadInput) as exc:
        read_resources([str(bad)])
    assert str(exc.value).startswith(f"{bad}:5: invalid YAML: ")
