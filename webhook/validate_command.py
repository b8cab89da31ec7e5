"""`quartermaster validate PATH...`: lint policy files by loading them exactly as `serve` does.

Each PATH is one policy set (as one `--policies` directory: bindings, params and exceptions join the
policies of the same set). Problems go to standard output, one per line, with the path as the user
wrote it; the summary goes to standard error. Exit 0 when every set loads, 2 on any problem.

`--explain` adds one line per loaded policy: how its family evaluates it on the request path, and why
(`file#document: kind/name: route: why`), as `serve` with the same options would.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from webhook.app import Quartermaster, Settings
from webhook.model.quickinit import frozen_dataclass
from webhook.model.policy import CompiledPolicy
from webhook.policy.broken import broken_policies
from webhook.policy.family import CelEvaluation
from webhook.policy.loader import LoadResult
from webhook.policy.testfiles import skipped_notice
from webhook.model.wording import counted

EXIT_OK, EXIT_PROBLEMS = 0, 2


@frozen_dataclass
class Checked:
    path: Path
    files: int
    policies: int
    problems: tuple[str, ...]
    notice: str = ""  # what was left out as Kyverno CLI test material
    routes: tuple[str, ...] = ()  # per policy: its route and why (`--explain`)


def check(path: Path, exception_namespaces: tuple[str, ...] = (),
          cel_evaluation: CelEvaluation = CelEvaluation.DEFAULT) -> Checked:
    if not path.exists():
        return Checked(path, 0, 0, (f"{path}: no such file or directory",))
    settings = Settings(policies=path, exception_namespaces=exception_namespaces, cel_evaluation=cel_evaluation)
    qm = Quartermaster.build(settings, with_metrics=False)
    result = qm.source.reload()
    base = path if path.is_dir() else path.parent
    problems = tuple(str(error).replace(error.file, str(base / error.file), 1) if error.file else str(error)
                     for error in result.errors)
    return Checked(path, len(result.files), len(result.policies), problems + _kept_broken(result, base),
                   skipped_notice(result.skipped) if result.skipped else "",
                   tuple(_route(policy, base) for policy in result.policies))


def _route(policy: CompiledPolicy, base: Path) -> str:
    traits = policy.traits
    where = f"{base / policy.source.file}#{policy.source.document}"
    return f"{where}: {policy.id}: {traits.route}" + (f": {traits.why}" if traits.why else "")


def _kept_broken(result: LoadResult, base: Path) -> tuple[str, ...]:
    """Policies that load with a compile error kept as a value (a CEL expression that does not parse):
    `serve` takes them and lets their failure policy answer every request they match (Fail: a denial), so a
    linter that passed them would pass a policy that refuses every pod."""
    return tuple(broken.describe(str(base / broken.source.file)) for broken in broken_policies(result.policies))


def run_validate(paths: list[Path], allow_empty: bool, out: TextIO, err: TextIO,
                 exception_namespaces: tuple[str, ...] = (), cel_evaluation: CelEvaluation = CelEvaluation.DEFAULT,
                 explain: bool = False) -> int:
    """`exception_namespaces`: as `serve --exception-namespace` will be given (exceptions of others are errors).
    `explain`: print each policy's route too (`--explain`)."""
    checked = [check(path, exception_namespaces, cel_evaluation) for path in paths]
    for item in checked:
        for problem in item.problems:
            out.write(problem + "\n")
        for route in item.routes if explain else ():
            out.write(route + "\n")
        if item.notice:
            err.write(f"quartermaster validate: note: {item.path}: {item.notice}\n")
        if not item.problems and not item.policies and not allow_empty:
            err.write(f"quartermaster validate: warning: {item.path}: no policy documents "
                      "(serve would admit everything unchanged; --allow-empty to silence)\n")
    problems = sum(len(item.problems) for item in checked)
    policies, files = sum(item.policies for item in checked), sum(item.files for item in checked)
    verdict = counted(problems, "problem") if problems else "no problems"
    err.write(f"quartermaster validate: {counted(policies, 'policy', 'policies')} in {counted(files, 'file')}, {verdict}\n")
    return EXIT_PROBLEMS if problems else EXIT_OK
