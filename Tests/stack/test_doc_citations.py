"""Citations of the repository's own docs point at headings that exist (issue 38).

Code comments, scripts, manifests and docs cite a page and a heading of it in one of two forms:
docs/scaling.md, "The database pool" (several headings of one page: "A" and "B"), or, for the protocol,
docs/protocol/accounts.md#anonymous-sign-up (several sections of one page: …#a, #b), the heading's anchor
as GitHub renders it. A heading renamed or a section moved leaves such a citation pointing nowhere; this
test reads every tracked file and fails on each citation whose page or heading is missing, and on any file
that still cites the protocol references kept outside the repository instead of docs/protocol/.
"""

import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]

# A line break inside a comment or a paragraph, with the next line's comment marker: read as one space.
CONTINUATION = re.compile(r"[ \t]*\n[ \t]*(?:///?|#+(?=[ \t])|--|\*)?[ \t]*")
CITATION = re.compile(r"docs/([\w./-]+?\.md),? ((?:\"[^\"\n]{1,160}\"(?:,? (?:and|or) |, )?)+)")
ANCHORED = re.compile(r"docs/([\w./-]+?\.md)#([a-z0-9-]+)((?:,[ \t]*#[a-z0-9-]+)*)")
QUOTED = re.compile(r"\"([^\"\n]{1,160})\"")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$")
# A paragraph or list item that opens with a bold title is cited like a heading: "- **Order of checks** (…)".
RUN_IN = re.compile(r"^[ \t]*(?:[-*][ \t]+)?\*\*([^*]+?)[.:]?\*\*")
# Files that are not prose or code of ours: skip them.
SKIPPED_SUFFIXES = {".png", ".jpg", ".svg", ".ico", ".json", ".resolved", ".der", ".pem", ".key", ".crt"}


def tracked_files():
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in listing.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file() and path.suffix not in SKIPPED_SUFFIXES:
            yield name, path


def headings(page: pathlib.Path) -> set[str]:
    found = set()
    in_fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line) or RUN_IN.match(line)
        if match:
            text = match.group(1).replace("**", "").replace("`", "").rstrip(".:")
            found.add(text)
            # "6. Login storms" is cited as "Login storms"; "Where the hashing runs (issue 37)" as
            # "Where the hashing runs".
            numbered = re.sub(r"^(?:[A-Z]?\d+(?:\.\d+)*\.?)\s+", "", text)
            found.add(numbered)
            found.add(re.sub(r"\s*\([^)]*\)$", "", numbered))
    return found


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")


def citations():
    for name, path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        flat = CONTINUATION.sub(" ", text)
        for match in CITATION.finditer(flat):
            for heading in QUOTED.findall(match.group(2)):
                yield name, match.group(1), heading.replace("`", "")
        for match in ANCHORED.finditer(flat):
            for fragment in [match.group(2)] + re.findall(r"#([a-z0-9-]+)", match.group(3)):
                yield name, match.group(1), "#" + fragment


def test_every_cited_heading_exists():
    pages: dict[str, set[str] | None] = {}
    broken = []
    count = 0
    for name, page, heading in citations():
        count += 1
        if page not in pages:
            path = ROOT / "docs" / page
            pages[page] = headings(path) if path.is_file() else None
        found = pages[page]
        if found is None:
            broken.append(f"{name}: docs/{page} does not exist")
        elif heading.startswith("#") and heading[1:] not in {anchor(h) for h in found}:
            broken.append(f"{name}: docs/{page} has no heading whose anchor is {heading}")
        elif not heading.startswith("#") and heading not in found:
            broken.append(f"{name}: docs/{page} has no heading \"{heading}\"")
    assert count > 100, f"only {count} citations found: the pattern no longer matches how the code cites docs"
    assert not broken, "citations of missing docs:\n" + "\n".join(sorted(set(broken)))


def test_the_protocol_is_cited_from_the_repository():
    outside = []
    for name, path in tracked_files():
        if name == "CHANGELOG.md" or name == "Tests/stack/test_doc_citations.py":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if re.search(r"\bAPI\.md\b|CLIENT-SDKS\.md|\.\./shared/|/work/shared", line):
                outside.append(f"{name}:{number}: {line.strip()[:120]}")
    assert not outside, "cite docs/protocol/ instead:\n" + "\n".join(outside)
