"""Citations in code and docs name a topic of docs/sources.md that exists, and every source
there is a link to a public document at a pinned revision."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (ROOT / "docs" / "sources.md").read_text()
CITATION = re.compile(r"\b(Hardware|ISA|Language|Checks) §(\d+)")
TREES = ("docs", "nkic", "runtime", "benchmarks", "tests", "examples")


def cited_files():
    yield ROOT / "README.md"
    for tree in TREES:
        for path in (ROOT / tree).rglob("*"):
            if path.suffix in (".py", ".md") and ".venv" not in path.parts:
                yield path


def test_every_cited_topic_is_listed_in_sources():
    anchors = set(re.findall(r'<a id="(\w+-\d+)"></a>', SOURCES))
    cited = {}
    for path in cited_files():
        for kind, number in CITATION.findall(path.read_text(encoding="utf-8")):
            cited.setdefault(f"{kind.lower()}-{number}", path.relative_to(ROOT))
    assert len(cited) >= 20
    missing = {a: str(p) for a, p in cited.items() if a not in anchors}
    assert not missing


def test_every_topic_links_public_documents_at_a_pinned_revision():
    topics = re.findall(r'^\* <a id="[\w-]+"></a>(.*)$', SOURCES, re.MULTILINE)
    assert len(topics) > 40
    for line in topics:
        links = re.findall(r"\]\((https?://[^)]+)\)", line)
        assert links, line
        for url in links:
            assert re.match(
                r"https://github\.com/aws-neuron/aws-neuron-sdk/blob/[0-9a-f]{40}/\S+$", url
            ), url
