"""The switches of the CEL family's fast paths, one per tier (docs/fast-paths.md says what each does and what
it was measured to give). All are on by default; QUARTERMASTER_CEL_FAST_PATHS_OFF lists those to turn off
(comma-separated), for an operator comparing, or a benchmark measuring, one tier. `--cel-evaluation=reference`
turns every one off at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENVIRONMENT = "QUARTERMASTER_CEL_FAST_PATHS_OFF"


@dataclass(frozen=True)
class FastPaths:
    group: bool = True  # the set's fused group: one joined program for the members a request matches
    python: bool = True  # fused programs evaluated as Python (webhook.cel.to_python) before the C++ runtime
    memo: bool = True  # a group's decision taken once per request and read by every member (EvalContext.memo)

    @classmethod
    def from_environment(cls) -> "FastPaths":
        """ValueError naming the variable and the tiers for a name that is none of them."""
        text = os.environ.get(ENVIRONMENT, "")
        off = {name.strip() for name in text.split(",") if name.strip()}
        known = ("group", "python", "memo")
        unknown = sorted(off - set(known))
        if unknown:
            raise ValueError(f"{ENVIRONMENT}: {', '.join(map(repr, unknown))} is no CEL fast path (those that can be "
                             f"turned off: {', '.join(known)})")
        return cls(**{name: name not in off for name in known})
