"""YAML read with bounds on what aliases and nesting can make of a few bytes.

PyYAML builds an alias as a shared reference, so `a: &a [x,x,...]` and eight more lines of nine `*a`
each load in microseconds: but anything that then walks the data as a tree (a JSON copy, a conversion to
CEL values, a schema check) walks 9^9 nodes, for minutes and gigabytes. `&a [*a]` is a list that
contains itself: every walk of it is endless. Kubernetes' own YAML reader (go-yaml) refuses such
documents ("excessive aliasing"); so does this one, from the composed node graph, before anything is
built: each node is visited once, whatever the aliases expand to.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

import yaml

from webhook.model.quickinit import frozen_dataclass

# libyaml composes far faster than PyYAML's own reader and stops at 1,000 levels of flow nesting with an
# error where the Python composer recurses at length before its RecursionError
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# as for AdmissionReviews (model/boundedjson.py): deeper than any Kubernetes object or policy
MAX_DEPTH = 100
# nodes that aliases may add beyond the document's own: reuse of a block by anchors stays far below it
MAX_ALIAS_NODES = 10_000


@frozen_dataclass
class NodeShape:
    nodes: int  # distinct nodes of the document
    expanded: int  # nodes of the tree the data is once every alias is expanded
    depth: int  # levels of that tree
    heaviest_alias: yaml.Node | None = field(default=None, compare=False)  # the repeated node that expands most


class BoundedYamlError(yaml.MarkedYAMLError):
    """A YAMLError, so that whoever reports YAML errors reports this one too, with its line."""


def yaml_problem(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """The 1-based line a YAML error points at (None when it has no mark) and its problem in one line."""
    if isinstance(exc, yaml.MarkedYAMLError):
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        if exc.problem:
            return line, exc.problem
        return line, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def measure(root: yaml.Node) -> NodeShape:
    """The shape of the data `root` constructs to; raises BoundedYamlError when it contains itself.
    Post-order, iterative and memoized by node: linear in distinct nodes, never recursive."""
    expanded: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    heaviest: yaml.Node | None = None
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        children = _children(node)
        if finished:
            on_path.discard(key)
            expanded[key] = 1 + sum(expanded[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            continue
        if key in expanded:  # met again: an alias (or a sibling that named it)
            if heaviest is None or expanded[key] > expanded[id(heaviest)]:
                heaviest = node
            continue
        if key in on_path:  # an alias inside the very node it names
            raise BoundedYamlError(None, None, "an alias refers to a node that contains it (recursive data)",
                                   node.start_mark)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children)
    return NodeShape(len(expanded), expanded[id(root)], depth[id(root)], heaviest)


def check(root: yaml.Node, max_depth: int = MAX_DEPTH) -> NodeShape:
    """measure(), and a BoundedYamlError for data aliases blow up or that is nested too deeply."""
    shape = measure(root)
    if shape.expanded - shape.nodes > MAX_ALIAS_NODES:
        raise BoundedYamlError(None, None, f"excessive aliasing: {shape.nodes} nodes expand to {shape.expanded} "
                               f"(aliases may add at most {MAX_ALIAS_NODES})", (shape.heaviest_alias or root).start_mark)
    if shape.depth > max_depth:
        raise BoundedYamlError(None, None, f"nested deeper than {max_depth} levels", root.start_mark)
    return shape


def safe_load_all(text: str, reader: type = _LOADER) -> list[Any]:
    """yaml.safe_load_all(text) as a list, refusing (BoundedYamlError) what check() refuses. `reader`:
    yaml.SafeLoader where PyYAML's own acceptance and messages matter more than speed."""
    loader = reader(text)
    try:
        out = []
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                out.append(None)
                continue
            check(node)
            out.append(loader.construct_document(node))
        return out
    finally:
        loader.dispose()


def safe_load(text: str) -> Any:
    """yaml.safe_load(text), refusing (BoundedYamlError) what check() refuses."""
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()
