"""Every supported format is read into chunks with citations and found by search (real embedder)."""

from __future__ import annotations

import pytest

from memdesk.core.documents.ingest import Ingestor
from memdesk.core.memory.archival import ArchivalMemory

pytestmark = pytest.mark.embedder

QUERIES = {
    "txt": ("where is the blue kettle", "blue kettle"),
    "md": ("how often should the tomatoes be watered", "tomatoes"),
    "pdf": ("reactor coolant valve inspection", "coolant valve"),
    "docx": ("where is the wedding reception", "lighthouse"),
    "html": ("yellow tram castle", "yellow tram"),
    "csv": ("which plant needs full sun", "cactus"),
    "json": ("server port owner", "quartermaster"),
    "py": ("function that launches a rocket", "launch_rocket"),
}


def test_every_format_is_ingested_cited_and_searchable(store, corpus, real_embedder, manual_clock):
    db, agent_id = store
    events = []
    report = Ingestor(db, ArchivalMemory(db, real_embedder, manual_clock), manual_clock).ingest(
        [corpus["txt"].parent], agent_id, events.append
    )
    assert report.failures == []
    assert report.added == len(corpus)
    assert {e.phase for e in events} >= {"reading", "embedding", "done"}
    assert db.scalar("SELECT COUNT(*) FROM documents WHERE status = 'done'") == len(corpus)
    assert db.scalar("SELECT COUNT(*) FROM passages WHERE embedded = 0") == 0
    archival = ArchivalMemory(db, real_embedder, manual_clock)
    for kind, (query, needle) in QUERIES.items():
        page = archival.search(agent_id, query)
        assert page.hits, kind
        best = page.hits[0].passage
        assert needle in best.text, (kind, best.text)
        assert best.citation.path == str(corpus[kind].absolute())
        start, end = best.citation.char_start, best.citation.char_end
        assert start is not None and end > start
    html_text = db.scalar(
        "SELECT group_concat(text) FROM passages p JOIN documents d ON d.id = p.document_id"
        " WHERE d.path LIKE '%page.html'"
    )
    assert "yellow tram" in html_text and "scriptword" not in html_text


def test_citations_point_at_page_section_and_offsets(store, corpus, real_embedder, manual_clock):
    db, agent_id = store
    Ingestor(db, ArchivalMemory(db, real_embedder, manual_clock), manual_clock).ingest(
        [corpus["pdf"], corpus["md"], corpus["docx"]], agent_id
    )
    archival = ArchivalMemory(db, real_embedder, manual_clock)
    pdf_hit = archival.search(agent_id, "reactor coolant valve").hits[0].passage
    assert pdf_hit.citation.page == 2
    assert "page 2" in pdf_hit.citation.label()
    md_hit = archival.search(agent_id, "water the tomatoes").hits[0].passage
    assert md_hit.citation.section == "Watering"
    source = corpus["md"].read_text(encoding="utf-8")
    assert source[md_hit.citation.char_start : md_hit.citation.char_end] == md_hit.text
    docx_hit = archival.search(agent_id, "wedding reception lighthouse").hits[0].passage
    assert docx_hit.citation.section == "Invitation"
