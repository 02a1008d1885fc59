"""Every relative link in README.md and docs/ resolves to a file or folder in the repository,
and every docs/ page the prose or the package names (`docs/planner.md`, ...) exists: a page
moved or renamed breaks this, not a reader."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")               # [text](target)
NAMED = re.compile(r"\bdocs/[\w./-]+\.md\b")         # docs/planner.md in prose or code


def _pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def _relative_links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [t.split("#")[0] for t in LINK.findall(text)
            if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_every_relative_link_in_the_docs_resolves():
    broken = [f"{p.relative_to(ROOT)}: {t}" for p in _pages() for t in _relative_links(p)
              if t and not (p.parent / t).exists()]
    assert not broken, broken


def test_every_docs_page_named_in_the_docs_and_the_package_exists():
    sources = _pages() + sorted((ROOT / "python" / "aoizora").rglob("*.py"))
    missing = sorted({f"{p.relative_to(ROOT)}: {m}" for p in sources
                      for m in NAMED.findall(p.read_text(encoding="utf-8"))
                      if not (ROOT / m).exists()})
    assert not missing, missing


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[here](gone.md) and [there](https://example.com) [x](#anchor)\n")
    assert _relative_links(page) == ["gone.md"]
