"""Wall time of a few request-path steps, in process (bench_steps.py) or inside a running `serve` (bench_server_steps.py).

`timed` replaces a function or method by the same, timed into TOTALS/COUNTS (each wrapper costs ~0.2-0.5 us);
`request_path_steps` wraps the steps both benchmarks report. A coroutine's time runs until it returns, its waits
included (the batteries), so steps nest: the batteries and the CEL family's joined program (`_answered`) are inside
the endpoint's `answer`, the verdict inside the engine.
"""

from __future__ import annotations

import inspect
import json
import os
import time
from typing import Any, Callable

TOTALS: dict[str, int] = {}  # label -> nanoseconds
COUNTS: dict[str, int] = {}  # label -> calls


def timed(owner: Any, name: str, label: str | None = None) -> None:
    """Replace owner.name (a function, method or coroutine method) by the same, timed into TOTALS[label]. Told by
    what a call returns, not by inspect.iscoroutinefunction, which says no for a coroutine method compiled by mypyc
    (webhook/compiled.py)."""
    inner: Callable[..., Any] = getattr(owner, name)
    key = label or name

    def add(started: int) -> None:
        TOTALS[key] = TOTALS.get(key, 0) + time.perf_counter_ns() - started
        COUNTS[key] = COUNTS.get(key, 0) + 1

    async def finish(awaitable: Any, started: int) -> Any:
        try:
            return await awaitable
        finally:
            add(started)

    def step(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            result = inner(*args, **kwargs)
        except BaseException:
            add(started)
            raise
        if inspect.isawaitable(result):
            return finish(result, started)
        add(started)
        return result
    setattr(owner, name, step)


def request_path_steps(metrics_type: Any, whole_answer: bool = False) -> None:
    """Wrap the steps the benchmarks report; `whole_answer`: the endpoint's `answer` too (decode to encode: in the
    server, what is outside it is TLS, HTTP and the event loop)."""
    import webhook.engine.dispatch as dispatch
    import webhook.server.handlers as handlers
    from webhook.platform.dra.mutator import DeviceClaimRewrite
    from webhook.platform.notebook.policy import NotebookInjection
    from webhook.platform.quota.policy import ProfileQuotaPolicy

    if whole_answer:
        timed(handlers.AdmissionEndpoint, "answer", "answer (all below)")
    timed(handlers, "parse_review")
    timed(handlers, "log_admission")
    timed(handlers, "json_bytes", "encode")
    timed(dispatch.jsonpatch, "diff", "patch diff")
    for method in ("_verdict", "_record", "_context", "_create"):
        timed(dispatch.AdmissionEngine, method)
    timed(metrics_type, "admission", "metrics")
    timed(metrics_type, "rule_results", "metrics per result")
    timed(ProfileQuotaPolicy, "validate", "quota (battery)")
    timed(NotebookInjection, "mutate", "notebook injection")
    timed(DeviceClaimRewrite, "mutate", "DRA rewrite")


ENV = "QM_STEP_TIMINGS"  # the file a server started with server_hook/ on its PYTHONPATH writes its timings to


def server_hook() -> None:
    """In a `serve` process (server_hook/sitecustomize.py calls this, after site has put the package on the path):
    wrap the steps; on SIGUSR1 start counting afresh (after the warm-up); at exit write {label: [nanoseconds,
    calls]} as JSON to the file $QM_STEP_TIMINGS. Nothing at all without that variable."""
    path = os.environ.get(ENV)
    if not path:
        return
    import atexit
    import signal

    from webhook.observability.metrics import Metrics

    request_path_steps(Metrics, whole_answer=True)

    def afresh(*_: Any) -> None:
        TOTALS.clear()
        COUNTS.clear()

    def write() -> None:
        with open(path, "w") as out:
            json.dump({label: [TOTALS[label], COUNTS[label]] for label in TOTALS}, out)

    signal.signal(signal.SIGUSR1, afresh)
    atexit.register(write)
