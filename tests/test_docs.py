"""The README a newcomer reads in five minutes, and docs/ whose links lead somewhere.

The README stays short (what MemDesk is, the two commands, the first five minutes, where the data
lives, privacy in brief, a small architecture picture); the rest lives in docs/. A relative link
in the README or a page of docs/ must name a file or folder of the repository, and a link to a
heading (``page.md#heading``) a heading of that page, so a page or section moved or renamed cannot
leave a link that goes nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 200

#: A Markdown link or image, inline: [text](target) or ![alt](target "title").
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
#: A fenced code block: links inside are examples, not links.
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
EXTERNAL = ("http://", "https://", "mailto:", "#")


#: A Markdown heading line (outside code blocks).
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces to
    hyphens, a repeated one numbered."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for title in HEADING.findall(text):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link either
    return [target for target in LINK.findall(text) if not target.startswith(EXTERNAL)]


def test_the_readme_is_read_in_five_minutes():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_or_heading_of_the_repository(page):
    missing = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve()
        if not linked.exists():
            missing.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)} links to what is not there: {missing}"


def test_the_link_check_sees_links_and_images_and_skips_code_and_the_web(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "See [the guide](docs/guide.md#start) and ![a picture](docs/shot.png).\n"
        "The web: [site](https://example.org), [top](#top).\n"
        "`[not a link](nowhere.md)`\n"
        "```\n[nor this](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["docs/guide.md#start", "docs/shot.png"]


def test_headings_get_the_anchors_github_gives_them(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Using MemDesk\n## Is this machine ready? `memdesk doctor`\n## Notes\n## Notes\n```\n# not a heading\n```\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"using-memdesk", "is-this-machine-ready-memdesk-doctor", "notes", "notes-1"}
