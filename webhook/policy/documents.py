"""Read YAML files into documents that remember where each field stands (for file:line errors)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml


@dataclass(frozen=True)
class Document:
    file: str
    index: int
    data: Any
    node: yaml.Node | None

    def line_of(self, path: Sequence[str | int]) -> int | None:
        """1-based line of the deepest node on `path` that exists (the parent when the field is missing)."""
        node = self.node
        if node is None:
            return None
        best = node.start_mark.line + 1
        for step in path:
            child = None
            if isinstance(node, yaml.MappingNode):
                child = next((v for k, v in node.value if getattr(k, "value", None) == step), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
                child = node.value[step]
            if child is None:
                break
            node = child
            best = node.start_mark.line + 1
        return best


class DocumentError(Exception):
    def __init__(self, file: str, index: int, line: int | None, message: str) -> None:
        super().__init__(message)
        self.file, self.index, self.line, self.message = file, index, line, message


def read_documents(path: Path, display: str | None = None) -> Iterator[Document]:
    """Every non-empty YAML document of a file; a syntax error raises DocumentError with its line."""
    name = display or str(path)
    text = path.read_text(encoding="utf-8")
    loader = yaml.SafeLoader(text)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                data = loader.construct_document(node)
                if data is not None:
                    yield Document(name, index, data, node)
            index += 1
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise DocumentError(name, index, mark.line + 1 if mark else None, f"invalid YAML: {problem}") from None
    finally:
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
