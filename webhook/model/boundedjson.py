"""The JSON of a request body, decoded within bounds: no NaN or infinity, no number beyond a double, no lone
UTF-16 surrogate, and no value nested deeper than MAX_DEPTH levels (checked by counting brackets when that
settles it, else level by level without recursion). model/review.py reads AdmissionReviews through it."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from webhook.model.errors import MalformedReview

# Deeper than any Kubernetes object; far enough below Python's recursion limit that copying, diffing and
# CEL conversion of an admitted object (a few frames per level) can never raise RecursionError.
MAX_DEPTH = 100


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    """1e400 is JSON but no double: orjson and Go's decoder (the API server's) refuse it; float() made it inf."""
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"{text} is beyond the range of a double")
    return value


def decode_json(body: bytes | bytearray | str) -> Any:
    """The JSON text of a request body as Python values; MalformedReview when it is not JSON we accept."""
    # orjson first (about twice as fast on a pod review); it refuses NaN/Infinity and nesting past 1024
    # levels too. What it refuses goes to the standard parser, which accepts a little more (UTF-16/32, huge
    # integers) and words the errors as they always were worded.
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        doc = json.loads(body, parse_constant=_no_constants, parse_float=_finite)
    except RecursionError:  # the C decoder's own guard, at about 1000 levels
        raise MalformedReview(f"body is not JSON we accept: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedReview(f"body is not JSON: {exc}") from None
    if _holds_lone_surrogate(doc):
        # orjson refuses these; the standard parser turns the escape into a str that no UTF-8 encoder takes: a
        # namespace of one made every later /metrics scrape fail. The API server never sends one (Go's encoder
        # writes U+FFFD for what is not Unicode).
        raise MalformedReview("body is not JSON we accept: a string holds a lone UTF-16 surrogate "
                              "(an unpaired \\ud800-\\udfff escape), which is not Unicode text")
    return doc


_SURROGATE = re.compile(r"[\ud800-\udfff]")  # escapes for re: a literal lone surrogate cannot be compiled (mypyc)


def _holds_lone_surrogate(doc: Any) -> bool:
    """Only for what orjson refused (rare: UTF-16/32 text, integers beyond 64 bits): a walk without recursion."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if type(node) is str:
            if _SURROGATE.search(node):
                return True
        elif type(node) is dict:
            for key, value in node.items():
                if _SURROGATE.search(key):
                    return True
                stack.append(value)
        elif type(node) is list:
            stack.extend(node)
    return False


_CONTAINERS = (dict, list)
_ALL_BUT_BRACKETS = bytes(b for b in range(256) if b not in b"{[")


def _too_deep(node: dict[str, Any] | list[Any], levels_left: int) -> bool:
    """Is some container `levels_left` levels below `node`? Level by level, no recursion: bounded by
    the levels, whatever the input, and without a Python call per container."""
    level = [node]
    while level:
        if levels_left == 0:
            return True
        levels_left -= 1
        below = []
        for parent in level:
            for child in parent.values() if isinstance(parent, dict) else parent:
                if isinstance(child, _CONTAINERS):
                    below.append(child)
        level = below
    return False


def shallow_body(body: bytes | bytearray | str) -> bool:
    """True when no value in this JSON text can be nested deeper than MAX_DEPTH levels: a container
    at depth d sits inside d+1 opening brackets, each a '{' or '[' character of the text, so fewer
    brackets than that in the whole text settle it without walking the decoded objects. (In UTF-16
    and UTF-32 the character still holds a byte 0x7B or 0x5B; brackets inside strings only make
    the count larger, never smaller.) False says nothing: walk them."""
    if isinstance(body, (bytes, bytearray)):
        # what is left once every other byte value is deleted: the brackets, counted in one pass over the
        # body instead of one per bracket (about half the time of the two count() calls)
        return len(body.translate(None, _ALL_BUT_BRACKETS)) <= MAX_DEPTH
    if isinstance(body, str):
        return body.count("{") + body.count("[") <= MAX_DEPTH
    return False


def check_depth(root: Any, where: str) -> None:
    if _too_deep(root, MAX_DEPTH):
        raise MalformedReview(f"{where} is nested deeper than {MAX_DEPTH} levels")
