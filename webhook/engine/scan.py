"""Background scan: existing resources evaluated against the validating policies, as a dry run.

Each object goes through an engine on the same policies and state as admission, as a CREATE review
with dryRun set: nothing is created, recorded or reserved, mutating policies never run, and only
policies that take part in background scans (`CompiledPolicy.background`) are evaluated. Its results
go to the sink given (in live mode, the report writer's background entry: an enforced failure
found by a scan denied nothing, the resource exists and its report must say so). No `kubernetes` import: standalone
`quartermaster report` scans the in-memory state with it too.
"""

from __future__ import annotations

import asyncio
from typing import Sequence

from webhook.engine.dispatch import AdmissionEngine
from webhook.engine.offline import admit_offline
from webhook.model.cluster import CLUSTER_SCOPED, ClusterState
from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome
from webhook.model.review import UserInfo
from webhook.policy.snapshot import PolicyStore
from webhook.reports.sink import ResultSink

SCAN_USER = UserInfo("system:serviceaccount:quartermaster:background-scan", ("system:serviceaccounts",))


@frozen_dataclass
class ScanSummary:
    resources: int  # objects evaluated
    results: int  # rule results produced
    failures: int  # fail or error results (enforced or audited)


async def scan(store: PolicyStore, state: ClusterState, sink: ResultSink, kinds: Sequence[str] | None = None,
               namespace: str = "") -> ScanSummary:
    """Evaluate every object of `kinds` (default: every kind the state holds) in `namespace`, or everywhere;
    never mutates anything."""
    engine = AdmissionEngine(store, state, sink)
    if kinds is None:
        kinds = state.kinds()
    resources = results = failures = 0
    for kind in kinds:
        if kind in CLUSTER_SCOPED and namespace:
            objects = [o for o in [state.get(kind, "", namespace)] if o is not None]
        else:
            objects = state.list(kind, namespace)
        for obj in objects:
            checked = await admit_offline(engine, obj, user=SCAN_USER, dry_run=True, background=True)
            resources += 1
            results += len(checked.results)
            failures += sum(1 for r in checked.results if r.outcome in (Outcome.FAIL, Outcome.ERROR))
            await asyncio.sleep(0)  # admissions come first: let them in between objects
    return ScanSummary(resources, results, failures)
