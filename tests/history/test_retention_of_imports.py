"""Years of imported history under a short retention setting: what a person expects is to have what
they imported, not to lose it at the next idle moment because its messages were written years ago.
Retention counts an imported message's days from its import (memdesk.core.memory.forget.retention),
and the import's preview says so, with the day they would go."""

from __future__ import annotations

from datetime import date, timedelta

from memdesk.app.operations import import_history, open_retention
from memdesk.core.transfer.history.preview import Preview, Selection, describe, preview, retention_warning
from memdesk.core.transfer.history.reading import Export


def with_retention(services, agent_id: int, days: int):
    retention = open_retention(services)
    retention.set_days(agent_id, days)
    retention.confirm(agent_id)
    return retention


def test_imported_messages_count_their_days_from_their_import_not_their_original_dates(
    services, agent_id, chatgpt_zip, run_import, clock
):
    recall = services.memory.recall
    old = recall.add(
        agent_id, role="user", kind="user_message", content="an old chat", search_text="an old chat",
        created_at=clock.now() - timedelta(days=40),
    )  # fmt: skip
    retention = with_retention(services, agent_id, 30)
    run_import(chatgpt_zip)  # messages from 2024, imported now
    assert recall.imported_count(agent_id) == 9
    assert retention.preview(agent_id).messages == 1  # only the chat's own old message is due
    assert retention.apply(agent_id) == 1
    assert recall.get(old.id) is None and recall.imported_count(agent_id) == 9
    clock.advance(days=31)  # 30 days after the import: they go like any other old message
    assert retention.apply(agent_id) == 9 and recall.imported_count(agent_id) == 0


def test_the_preview_says_how_many_are_older_than_retention_keeps_and_when_they_go(
    services, agent_id, chatgpt_zip, clock
):
    with_retention(services, agent_id, 30)
    seen = import_history(services, agent_id, chatgpt_zip, apply=False).preview
    assert seen.retention is not None and seen.tally.expiring == 9
    until = clock.now() + timedelta(days=30)
    warning = retention_warning(seen)
    assert "9 of the 9 messages chosen are older" in warning and f"until {until.day} " in warning
    assert any(line.startswith("  note: Retention is on") for line in describe(seen))
    assert seen.as_dict()["retention"]["older_than_retention"] == 9


def test_without_retention_the_preview_warns_of_nothing(services, agent_id, chatgpt_zip):
    seen = import_history(services, agent_id, chatgpt_zip, apply=False).preview
    assert seen.retention is None and retention_warning(seen) == ""


def test_another_choice_is_counted_as_a_fresh_preview_would_without_reading_the_file_again(chatgpt_zip, clock):
    read = preview(Export(chatgpt_zip), keep_rows=True, retention=(30, clock.now()))
    for selection in (Selection(titles=("dinner",)), Selection(until=date(2024, 5, 31))):
        counted: Preview = read.choose(selection)
        fresh = preview(Export(chatgpt_zip), selection, retention=(30, clock.now()))
        assert counted.tally == fresh.tally and counted.titles == fresh.titles
    assert read.choose(Selection(titles=("dinner",))).tally.chosen_messages == 7
