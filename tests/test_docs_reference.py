"""The README and docs/*.md read as a reference: no lab notebook (round numbers, sessions, commit hashes of this
repository), a short performance section in the README, and the links between the docs pages resolve."""

from __future__ import annotations

import re

from tests.support import REPO

PAGES = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]

# "the twenty-first round", "this round", "the last stop", "this session": the history belongs to CHANGELOG.md
HISTORY = re.compile(r"\b(?:\w+(?:st|nd|rd|th) round|this round|the round's|last stop|(?:this|previous|last) session)\b",
                     re.IGNORECASE)
# a short commit hash standing alone (not a generated name such as quartermaster-gpu-d80c10943f, nor 1e99999999)
HASH = re.compile(r"(?<![\w/-])(?!\d+e\d+(?![\w/-]))(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,12}(?![\w/-])")
# commits of other repositories name the version of what was measured
FOREIGN_COMMIT = re.compile(r"the library's commit $")
# pages that other work adds next to these; a link to them is not a broken link while they are under way
PAGES_IN_PROGRESS = {"fast-paths.md", "cel-differences.md"}


def test_no_page_keeps_a_history_of_rounds_or_sessions():
    found = [f"{page.name}:{n}: {m.group(0)}" for page in PAGES for n, line in enumerate(page.read_text().splitlines(), 1)
             for m in HISTORY.finditer(line)]
    assert not found, found


def test_no_page_names_a_commit_of_this_repository():
    found = []
    for page in PAGES:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            found += [f"{page.name}:{n}: {m.group(0)}" for m in HASH.finditer(line)
                      if not FOREIGN_COMMIT.search(line[:m.start()])]
    assert not found, found


def test_the_readme_performance_section_is_short():
    readme = (REPO / "README.md").read_text()
    section = readme.split("\n## Performance\n", 1)[1].split("\n## ", 1)[0]
    assert len(section.strip().splitlines()) <= 20
    assert "docs/performance.md" in section


def test_links_between_pages_resolve():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text()):
            if target.startswith("http") or (page.parent / target).name in PAGES_IN_PROGRESS:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.name} -> {target}")
    assert not broken, broken


def test_performance_page_is_one_run_with_its_command_and_a_kyverno_section_last():
    page = (REPO / "docs" / "performance.md").read_text()
    assert "python load-tests/suite.py" in page
    assert page.count("| case | Quartermaster req/s | no-op req/s |") == 1
    headings = re.findall(r"^## (.+)$", page, flags=re.M)
    assert headings[-1] == "Side by side with Kyverno"


def test_the_cel_pages_split_author_guide_from_internals():
    guide = (REPO / "docs" / "cel.md").read_text()
    internals = (REPO / "docs" / "cel-internals.md").read_text()
    for name in ("cel-internals.md", "cel-differences.md"):
        assert f"]({name}" in guide
    for name in ("fast-paths.md", "cel-differences.md", "cel.md"):
        assert f"]({name}" in internals
    # what a policy author needs stays in the guide; how the fast paths work is only in the internals page
    for heading in ("## Environments", "## Errors", "## Limits", "### Cost"):
        assert heading in guide
    assert "to_python" not in guide and "fusedgroup" not in guide
