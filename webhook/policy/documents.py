"""Read YAML files into documents that remember where each field stands (for file:line errors)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml

from webhook.model import boundedyaml
from webhook.model.quickinit import frozen_dataclass

# what the YAML reader refuses: C0 controls but tab, LF and CR; DEL; C1 controls but NEL
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x84\x86-\x9f]")


@frozen_dataclass
class Document:
    file: str
    index: int
    data: Any
    node: yaml.Node | None

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """1-based line of the deepest field on `path` that exists (the parent when the field is missing): a mapping
        field's line is its key's, where a block value (a nested mapping or list) starts on the line below."""
        node = self.node
        if node is None:
            return None
        best = node.start_mark.line + 1
        for step in path:
            child, mark = None, None
            if isinstance(node, yaml.MappingNode):
                key, child = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == step),
                                  (None, None))
                mark = key.start_mark if key is not None else None
            elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
                child = node.value[step]
                mark = child.start_mark
            if child is None or mark is None:
                break
            node = child
            best = mark.line + 1
        return best


class DocumentError(Exception):
    def __init__(self, file: str, index: int, line: int | None, message: str) -> None:
        super().__init__(message)
        self.file, self.index, self.line, self.message = file, index, line, message


def _check_characters(name: str, text: str) -> None:
    """A NUL or another control character is a damaged file (a partial write, a binary pasted into a
    ConfigMap), never a policy: say where, instead of letting the YAML reader fail on it."""
    match = _CONTROL.search(text)
    if match:
        line = text.count("\n", 0, match.start()) + 1
        code = ord(match.group())
        raise DocumentError(name, 0, line, f"control character U+{code:04X} at line {line}: the file is damaged "
                                           "or not text; YAML allows only tab, newline and printable characters")


# libyaml's reader, far faster than PyYAML's own (reading YAML was a large part of `apply`'s policy loading).
# It differs from the reference reader in its messages and limits, and accepts what that one refuses in a few
# places (a tab after "key:", a comment right after a block scalar's `|`/`>`) and puts some empty values on
# another line after an explicit `? key`: so it reads only text without tabs, unusual line breaks, directives,
# such headers or explicit keys, only documents at most _FAST_DEPTH deep, and on any error gives way to the
# reference reader, which then says what users have always seen. tests/policy/test_fast_yaml.py compares
# the two readers over every YAML file of the repository and the conformance corpus, and over mutations.
_FAST_LOADER = yaml.CSafeLoader if yaml.__with_libyaml__ else None
# a "? " anywhere, not only at a line's start: inside a flow collection libyaml reads `{a: b? c}` as a plain scalar
# where PyYAML refuses it
_UNUSUAL = re.compile(r"[\t\r\x85\u2028\u2029\ufeff]|[|>][-+0-9]*#|^%|\?(?:\s|$)", re.MULTILINE)
_FAST_DEPTH = 64


def fast_nodes(text: str) -> list[tuple[yaml.Node | None, Any]] | None:
    """(node, data) of every document of `text` as the reference reader composes and constructs them, or
    None: read it with the reference reader (an error, or text this reader is not trusted with)."""
    if _FAST_LOADER is None or _UNUSUAL.search(text):
        return None
    loader = _FAST_LOADER(text)
    out: list[tuple[yaml.Node | None, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            # an alias bomb or a list containing itself is measured without walking it as a tree; the
            # reference reader refuses both with their line
            if node is not None and boundedyaml.check(node).depth > _FAST_DEPTH:
                return None
            out.append((node, loader.construct_document(node) if node is not None else None))
    except Exception:  # YAMLError, RecursionError, anything: the reference reader reports it
        return None
    finally:
        loader.dispose()
    return out


def safe_load_all(text: str) -> list[Any]:
    """yaml.safe_load_all(text) as a list: the same documents, the same errors."""
    fast = fast_nodes(text)
    return [data for _, data in fast] if fast is not None else boundedyaml.safe_load_all(text, yaml.SafeLoader)


def read_documents(path: Path, display: str | None = None) -> Iterator[Document]:
    """Every non-empty YAML document of a file; a syntax error raises DocumentError with its line."""
    name = display or str(path)
    text = path.read_text(encoding="utf-8")
    _check_characters(name, text)
    fast = fast_nodes(text)
    if fast is not None:
        for index, (node, data) in enumerate(fast):
            if node is not None and data is not None:
                yield Document(name, index, data, node)
        return
    index = 0
    loader = None
    try:
        loader = yaml.SafeLoader(text)
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                boundedyaml.check(node)
                data = loader.construct_document(node)
                if data is not None:
                    yield Document(name, index, data, node)
            index += 1
    except yaml.YAMLError as exc:
        marked = isinstance(exc, yaml.MarkedYAMLError)
        mark = exc.problem_mark if marked else None
        problem = (exc.problem if marked else None) or str(exc)
        raise DocumentError(name, index, mark.line + 1 if mark else None, f"invalid YAML: {problem}") from None
    except RecursionError:
        raise DocumentError(name, index, None, "invalid YAML: nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()


def policy_files(root: Path) -> list[Path]:
    """YAML files below root, sorted; dot-entries are skipped so a ConfigMap mount's ..data is read once."""
    if root.is_file():
        return [root]
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.suffix in (".yaml", ".yml") and path.is_file():
            found.append(path)
    return found
