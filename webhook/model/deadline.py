"""The deadline of the admission request being answered, for work that cannot otherwise see it.

The engine knows the request's deadline (the API server's `?timeout=`, less a margin); a CEL or JMESPath
evaluation runs synchronously below several layers of policy code that never pass it on. A contextvar
carries it there: set by the engine for the request's task, read by the evaluators' cost meters, which stop
an evaluation that is still running when it passes (an error the policy's failure policy decides).
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Iterator

_NONE = float("inf")
_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("quartermaster_request_deadline", default=_NONE)


def request_deadline() -> float:
    """time.monotonic() by which the request in flight must be answered; infinity outside a request."""
    return _DEADLINE.get()


@contextmanager
def answering_by(deadline: float) -> Iterator[None]:
    """Evaluations inside stop at `deadline` (time.monotonic()); an earlier deadline already set stays."""
    token = _DEADLINE.set(min(deadline, _DEADLINE.get()))
    try:
        yield
    finally:
        _DEADLINE.reset(token)
