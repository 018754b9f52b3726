"""The documentation holds together: every page of docs/ is one click from README.md, and every relative link of
README.md, ARCHITECTURE.md and docs/ names a file that exists and, where it names one, a heading of that file."""

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def pages() -> list[Path]:
    return [REPO / "README.md", REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("*.md"))]


def links(text: str) -> list[str]:
    """Link targets of a Markdown text, outside fenced code blocks."""
    return LINK.findall(FENCE.sub("", text))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (a repeated heading's later anchors get -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        base = anchor(heading)
        count = seen.get(base, 0)
        out.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return out


def broken(path: Path) -> list[str]:
    """The relative links of `path` that name no file, or a heading its file lacks, each with the reason."""
    out = []
    for target in links(path.read_text()):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, fragment = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            out.append(f"{path.relative_to(REPO)}: link {target!r}: no file {resolved}")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            out.append(f"{path.relative_to(REPO)}: link {target!r}: no heading #{fragment} in {resolved.name} "
                       f"(its anchors: {sorted(anchors(resolved))})")
    return out


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(REPO / t.partition("#")[0]).resolve() for t in links((REPO / "README.md").read_text())}
    docs = sorted((REPO / "docs").glob("*.md"))
    assert docs, "docs/ holds no page"
    missing = [str(p.relative_to(REPO)) for p in docs if p.resolve() not in linked]
    assert not missing, f"docs pages not linked from README.md: {missing}"


@pytest.mark.parametrize("path", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path):
    assert not broken(path), "\n".join(broken(path))


def test_a_broken_link_or_heading_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (tmp_path / "a.md").write_text("# Title: one `x`\n\n## Two, again\n\n[ok](#title-one-x) [ok](b.md#two-again)\n"
                                   "[gone](c.md) [no heading](b.md#three) ![image](img/none.png)\n"
                                   "```\n[in code](nowhere.md)\n```\n[web](https://example.org/x)\n")
    (tmp_path / "b.md").write_text("## Two, again\n")
    found = broken(tmp_path / "a.md")
    assert len(found) == 3
    assert "'c.md'" in found[0] and "'b.md#three'" in found[1] and "'img/none.png'" in found[2]
    assert anchors(tmp_path / "a.md") == {"title-one-x", "two-again"}
