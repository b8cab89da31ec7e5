"""Kyverno CLI test suites kept beside policies, as Kyverno's own repositories lay them out: a
`kyverno-test.yaml` (`cli.kyverno.io` documents) and the resources it names, or a `.kyverno-test/` folder.

They are not policies, and `quartermaster test` reads them; a policy directory that holds them loads its
policies and leaves these out, with one notice. A document of an unknown kind anywhere else is still refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

CLI_GROUP = "cli.kyverno.io"
TEST_FOLDER = ".kyverno-test"
# the fields of a Test (top level, and of each of its results) that name files beside it
_FILE_FIELDS = ("resources", "variables", "userinfo", "context", "patchedResource", "patchedResources",
                "generatedResource", "generatedResources", "cloneSourceResource")


def is_cli_document(data: Any) -> bool:
    """A Kyverno CLI document (Test, Values, UserInfo, Context): read by `quartermaster test`, never a policy."""
    api_version = data.get("apiVersion") if isinstance(data, Mapping) else None
    return isinstance(api_version, str) and api_version.split("/")[0] == CLI_GROUP


def in_test_folder(path: Path) -> bool:
    return TEST_FOLDER in path.absolute().parts


def named_files(test: Mapping[str, Any], path: Path) -> Iterator[Path]:
    """The files a CLI test document at `path` names (its resources, patched and generated resources...),
    resolved as `kyverno test` resolves them: relative to the test's own folder."""
    sources = [test] + [r for r in test.get("results") or () if isinstance(r, Mapping)]
    for source in sources:
        for name in _FILE_FIELDS:
            value = source.get(name)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str) and item:
                    yield (path.parent / item).resolve()


def skipped_notice(skipped: Sequence[tuple[str, int]]) -> str:
    """The one line that says what was left out: (file, document index) of each skipped document."""
    files = sorted({file for file, _ in skipped})
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return (f"left out {len(skipped)} Kyverno CLI test document{'s' if len(skipped) != 1 else ''} and test "
            f"resources in {shown}: not policies (`quartermaster test` runs them)")
