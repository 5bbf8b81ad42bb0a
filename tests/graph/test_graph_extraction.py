"""Extraction with the real spaCy pipeline: exact entities and facts on fixed text, bad input,
crash-safe resumption and retried failures."""

from __future__ import annotations

import contextlib

import pytest

from memdesk.core.embedding.hashing import HashingEmbedder
from memdesk.core.graph import extraction
from memdesk.core.graph.extraction import MAX_ATTEMPTS, ExtractionOptions, GraphExtractor
from memdesk.core.graph.nlp import LONG_TEXT_CHARS, SPEAKER, Analysis, FoundFact, person_would_name
from memdesk.core.graph.store import KnowledgeGraph


def test_fixed_text_gives_exact_entities_and_facts(analyser):
    (result,) = analyser.analyse(["My sister Ann moved to Berlin last year. I adopted a dog and I don't like coffee."])
    assert {(e.name, e.kind) for e in result.entities} == {
        ("Ann", "person"),
        ("Berlin", "place"),
        ("dog", "concept"),
        ("coffee", "concept"),
    }  # "sister" is Ann's relation to the speaker (a fact), no entity of its own
    assert set(result.facts) == {
        FoundFact("Ann", "move to", "Berlin"),
        FoundFact("Ann", "sister of", SPEAKER),
        FoundFact(SPEAKER, "adopt", "dog"),
        FoundFact(SPEAKER, "not like", "coffee"),
    }


@pytest.mark.parametrize(
    "text",
    [
        "Hi, I am Ada. I live in Lisbon and I love gardening. My sister Ines is a doctor in Porto.",
        "My sister Ines is a doctor.",
        "Ines, my sister, is a doctor.",
        "Ines is my sister.",
        "My daughter Ines is five.",
        "I met my colleague Zanele at lunch.",
    ],
)
def test_a_person_introduced_by_their_relation_is_a_person(analyser, text):
    """Issue 35, found as a new user: after "My sister Ines is a doctor in Porto." the Knowledge
    panel listed Ines as a product and "sister" as a concept. A name a relation noun introduces
    (my sister, my colleague, in any of the three ways of saying it) is a person's, whatever the
    tagger took it for; the noun is the relation to the speaker, not an entity of its own."""
    (result,) = analyser.analyse([text])
    kinds = {e.name: e.kind for e in result.entities}
    name = "Zanele" if "Zanele" in text else "Ines"
    assert kinds.get(name) == "person", kinds
    relation = next(w for w in ("sister", "daughter", "colleague") if w in text)
    assert relation not in kinds
    assert FoundFact(name, f"{relation} of", SPEAKER) in result.facts


def test_a_relation_said_of_nobody_named_and_a_pet_stay_what_they_were(analyser):
    unnamed, pet, job = analyser.analyse(["My sister is a doctor.", "My dog Rex sleeps a lot.", "Ines is a doctor."])
    assert ("sister", "concept") in {(e.name, e.kind) for e in unnamed.entities}
    assert "person" not in {e.kind for e in pet.entities}
    assert ("doctor", "concept") in {(e.name, e.kind) for e in job.entities}  # a job, not a relation


def test_the_issues_first_message_puts_ines_in_the_graph_as_a_person(graph, extractor, agent_id, say):
    say("Hi, I am Ada. I live in Lisbon and I love gardening. My sister Ines is a doctor in Porto.")
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    ines = graph.find(agent_id, "Ines")
    assert ines is not None and ines.kind == "person"
    assert graph.find(agent_id, "sister") is None
    assert ("Ines", "sister of", "User") in {(f.subject, f.relation, f.object) for f in graph.facts(ines.id)}


def test_a_conversation_becomes_a_graph(services, graph, extractor, agent_id, say, clock):
    say("My sister Ann lives in London.")
    say("Ann moved to Paris last month.", days_later=30)
    assert extractor.enqueue(agent_id) == 2
    report = extractor.run_entities(agent_id)
    assert report.sources == 2 and report.failed == 0
    ann = graph.find(agent_id, "Ann")
    current = {(f.subject, f.relation, f.object) for f in graph.facts(ann.id, current_only=True)}
    assert current == {("Ann", "move to", "Paris"), ("Ann", "sister of", "User")}
    closed = [f for f in graph.facts(ann.id) if not f.current]
    assert [(f.object, f.valid_to) for f in closed] == [("London", clock.now())]
    assert ann.mentions == 2 and graph.find(agent_id, "User").kind == "self"


def test_speakers_of_an_imported_conversation_are_people(graph, extractor, agent_id, say):
    say("I went to a LGBTQ support group yesterday.", author="Caroline")
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    caroline = graph.find(agent_id, "Caroline")
    assert caroline.kind == "person"
    assert [(f.relation, f.object) for f in graph.facts(caroline.id)] == [("go to", "LGBTQ support group")]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t ",
        "😀🎉🔥 ✨",
        "```python\nclass UserManager:\n    def GetData(self): return SELECT * FROM Users\n```",
        "<div class='Header'><br/></div> `QueryBuilder` https://example.com/Path/To/Page <img src='Logo.png'>",
        "Je suis allé à Paris avec mon frère pour voir la tour Eiffel et manger des croissants chauds.",
        "東京で友達と寿司を食べました。",
        "Привет, как дела? Я живу в Москве уже много лет.",
        "#\n***\n> \n- \n---\n|---|---|\n[](#) ![](x.png)",
    ],
)
def test_bad_input_gives_no_garbage_entities(analyser, text):
    (result,) = analyser.analyse([text])
    assert result == Analysis()


def test_markup_around_real_names_is_stripped(analyser):
    (result,) = analyser.analyse(
        ["**Ann** told me about `pip install` and 😀 her trip to Rome: https://rome.example/x"]
    )
    names = {e.name for e in result.entities}
    assert {"Ann", "Rome"} <= names
    assert not any(c in name for name in names for c in "*`:/😀")


def test_only_the_start_of_a_huge_message_is_read(analyser, monkeypatch):
    seen = []
    original = analyser._pipeline

    def spy():
        nlp = original()
        return type(
            "Spy",
            (),
            {
                "pipe": lambda self, texts, batch_size: nlp.pipe(
                    [seen.append(t) or t for t in texts], batch_size=batch_size
                )
            },
        )()

    monkeypatch.setattr(analyser, "_pipeline", spy)
    (result,) = analyser.analyse(["Ann visited Rome with her friend. " * 30_000])  # about 1 MB
    assert len(seen[0]) <= 20_000
    assert {e.name for e in result.entities} >= {"Ann", "Rome"}


def test_extraction_resumes_after_a_crash_without_losing_or_repeating(
    services, graph, analyser, clock, agent_id, say, monkeypatch
):
    for text in ("Ann lives in Paris.", "Bob works at Siemens.", "Carl works in Oslo."):
        say(text)
    extractor = GraphExtractor(graph, analyser, clock, ExtractionOptions(model_facts=False))
    extractor.enqueue(agent_id)
    calls = []
    original = graph.add_mention

    def dies_on_the_third_mention(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:  # mid-way through the second message: the process is killed
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(graph, "add_mention", dies_on_the_third_mention)
    with pytest.raises(KeyboardInterrupt):
        extractor.run_entities(agent_id)
    assert services.db.scalar("SELECT COUNT(*) FROM graph_mentions") == 2  # the first message's, committed
    monkeypatch.setattr(graph, "add_mention", original)
    restarted = GraphExtractor(graph, analyser, clock, ExtractionOptions(model_facts=False))
    assert restarted.enqueue(agent_id) == 0  # already queued, not queued twice
    restarted.run_entities(agent_id)
    assert restarted.pending(agent_id) == 0
    assert services.db.scalar("SELECT COUNT(*) FROM graph_mentions WHERE agent_id = ?", (agent_id,)) == 6  # each once
    assert {(f.subject, f.object) for f in graph.all_facts(agent_id)} == {
        ("Ann", "Paris"),
        ("Bob", "Siemens"),
        ("Carl", "Oslo"),
    }


def test_a_failing_source_is_retried_later_and_does_not_block_others(
    services, graph, analyser, clock, agent_id, say, caplog
):
    say("Ann lives in Paris.")
    poison = say("POISON")
    say("Bob lives in Rome.")
    extractor = GraphExtractor(graph, _Poisoned(analyser), clock, ExtractionOptions(model_facts=False))
    extractor.enqueue(agent_id)
    report = extractor.run_entities(agent_id)
    assert report.sources == 2 and report.failed == 1
    assert "retried" in caplog.text
    assert extractor.failures(agent_id) == [("message", poison, 1, "RuntimeError: cannot read POISON")]
    assert extractor.pending(agent_id, due_only=True) == 0  # not before its retry time
    clock.advance(minutes=1)
    extractor._analyser = analyser  # the cause went away
    assert extractor.run_entities(agent_id).sources == 1
    assert extractor.pending(agent_id) == 0


def test_a_source_that_always_fails_gives_up_after_the_last_attempt(graph, analyser, clock, agent_id, say):
    say("POISON")
    extractor = GraphExtractor(graph, _Poisoned(analyser), clock, ExtractionOptions(model_facts=False))
    extractor.enqueue(agent_id)
    for _ in range(MAX_ATTEMPTS + 2):
        extractor.run_entities(agent_id)
        clock.advance(hours=2)
    assert extractor.pending(agent_id) == 0 and extractor.failures(agent_id)[0][2] == MAX_ATTEMPTS


def test_with_extraction_off_new_messages_are_passed_over(graph, analyser, clock, agent_id, say):
    say("Ann lives in Paris.")
    extractor = GraphExtractor(graph, analyser, clock, ExtractionOptions(enabled=False))
    assert extractor.enqueue(agent_id) == 0
    extractor.options = ExtractionOptions(model_facts=False)
    say("Bob lives in Rome.")
    assert extractor.enqueue(agent_id) == 1
    extractor.run_entities(agent_id)
    assert graph.find(agent_id, "Ann") is None and graph.find(agent_id, "Bob") is not None
    assert extractor.rebuild(agent_id) == 2
    extractor.run_entities(agent_id)
    assert graph.find(agent_id, "Ann") is not None


def test_passages_get_entities_and_mentions_but_no_model_facts_by_default(services, graph, analyser, clock, agent_id):
    services.memory.archival.insert(agent_id, "The Eiffel Tower is in Paris. Gustave Eiffel built it.")
    extractor = GraphExtractor(graph, analyser, clock, ExtractionOptions(model_facts=True, document_facts=False))
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    assert graph.find(agent_id, "Paris").mentions == 1
    assert graph.mentions(graph.find(agent_id, "Paris").id)[0][0] == "passage"
    assert extractor.pending(agent_id, "facts") == 0


def test_model_facts_are_queued_for_messages(graph, analyser, clock, agent_id, say):
    say("Ann lives in Paris.")
    extractor = GraphExtractor(graph, analyser, clock, ExtractionOptions(model_facts=True))
    extractor.enqueue(agent_id)
    extractor.run_entities(agent_id)
    assert extractor.pending(agent_id, "facts") == 1


class _Poisoned:
    def __init__(self, analyser) -> None:
        self._analyser = analyser

    def analyse(self, texts):
        if any("POISON" in t for t in texts):
            raise RuntimeError("cannot read POISON")
        return self._analyser.analyse(texts)


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("Ann", "Ann"),
        ("New York", "New York"),
        ("HireVue", "HireVue"),
        ("JavaScript", "JavaScript"),
        ("Montserrat Media Hub", "Montserrat Media Hub"),
        ("Flask", "Flask"),
        ("Python 3.11.2", "Python"),
        ("Bootstrap 5.3", "Bootstrap"),  # a version is not part of the tool's name
        ("user_id", None),
        ("getUser", None),
        ("app/services.py", None),
        ("werkzeug.security", None),
        ("transactions(id", None),
        ("https://example.com/x", None),
        ("src/app", None),
        ("320ms", None),
        ("2024", None),
        ("Task 1 Set", None),
        ("Nov", None),
        ("Friday", None),
        ("Next Steps \n Research", None),
    ],
)
def test_only_names_a_person_would_say_are_entities(name, kept):
    assert person_would_name(name) == kept


def test_structure_of_a_technical_message_is_not_read_as_names(analyser):
    text = (
        "### Example Workflow\n"
        "- **Document Findings**: keep notes.\n"
        "| Task 1 Set | 320ms |\n"
        "I moved the budget tracker from Flask 2.3 to Quart with Craig, and `user_id` lives in models.py now.\n"
        "Generate a report every week."
    )
    (result,) = analyser.analyse([text])
    names = {e.name for e in result.entities}
    assert {"Flask", "Craig"} <= names
    for noise in (
        "Example Workflow",
        "Document Findings",
        "Task 1 Set",
        "320ms",
        "user_id",
        "models.py",
        "Generate",
        "Flask 2.3",
    ):
        assert noise not in names


def test_a_long_text_keeps_only_the_concepts_it_returns_to(analyser):
    passing = " ".join(f"The {word} was checked once." for word in ("ledger", "printer", "invoice", "kettle", "sofa"))
    long_text = (
        "The budget tracker needs a login page. " * 2
        + passing
        + " "
        + " ".join(["Ann checked the dashboard with me."] * 40)
    )
    assert len(long_text) > LONG_TEXT_CHARS
    (result,) = analyser.analyse([long_text])
    names = {e.name for e in result.entities}
    assert {"budget tracker", "login page", "Ann"} <= names
    assert not names & {"ledger", "printer", "invoice", "kettle", "sofa"}
    (short,) = analyser.analyse(["The ledger was checked once."])
    assert "ledger" in {e.name for e in short.entities}  # a chat line's nouns all count


class _WatchedStore:
    """Records, for the extractor's connection, what happens while it holds the write lock."""

    def __init__(self, db, monkeypatch) -> None:
        self.db = db
        self.embedded_in_transaction: list[bool] = []
        self.sources_per_transaction: list[int] = []
        original = db.transaction

        @contextlib.contextmanager
        def transaction():
            if db.in_transaction:
                with original():
                    yield db
                return
            before = self._queued()
            with original():
                yield db
            self.sources_per_transaction.append(max(0, before - self._queued()))

        monkeypatch.setattr(db, "transaction", transaction)

    def _queued(self) -> int:
        return int(self.db.scalar("SELECT COUNT(*) FROM graph_queue WHERE stage = 'entities'"))

    def embedder(self, inner):
        watched = self

        class Embedder:
            def __getattr__(self, name):
                return getattr(inner, name)

            def embed(self, texts):
                watched.embedded_in_transaction.append(watched.db.in_transaction)
                return inner.embed(texts)

        return Embedder()


def test_a_catch_up_holds_the_write_lock_for_one_source_at_a_time_and_never_while_embedding(
    services, analyser, clock, agent_id, say, monkeypatch
):
    """Another writer (an idle consolidation pass, with a five-second busy timeout) waits at most
    for one source's SQL, however long the history the extractor catches up on."""
    people = ["Ann", "Bob", "Carla", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kemal", "Lucia"]
    for person in people:
        say(f"My colleague {person} met me in Lisbon and then flew to Oslo.")
    watched = _WatchedStore(services.db, monkeypatch)
    graph = KnowledgeGraph(services.db, clock, watched.embedder(HashingEmbedder()))
    extractor = GraphExtractor(graph, analyser, clock, ExtractionOptions(model_facts=False))
    monkeypatch.setattr(extraction, "ENQUEUE_CHUNK", 5)
    assert extractor.enqueue(agent_id) == 12
    watched.sources_per_transaction.clear()
    report = extractor.run_entities(agent_id)
    assert report.sources == 12 and graph.find(agent_id, "Lucia") is not None
    assert watched.embedded_in_transaction and not any(watched.embedded_in_transaction)
    assert max(watched.sources_per_transaction) == 1 and sum(watched.sources_per_transaction) == 12


def test_enqueue_moves_a_long_history_into_the_queue_a_chunk_a_transaction(
    services, graph, analyser, clock, agent_id, say, monkeypatch
):
    for n in range(7):
        say(f"Message {n} about Lisbon.")
    monkeypatch.setattr(extraction, "ENQUEUE_CHUNK", 3)
    commits = []
    original = services.db.transaction

    @contextlib.contextmanager
    def counted():
        with original():
            yield services.db
        commits.append(1)

    monkeypatch.setattr(services.db, "transaction", counted)
    extractor = GraphExtractor(graph, analyser, clock, ExtractionOptions(model_facts=False))
    assert extractor.enqueue(agent_id) == 7
    assert len(commits) >= 3  # 3 + 3 + 1 messages, each chunk with its watermark
    assert extractor.enqueue(agent_id) == 0  # nothing twice


def test_words_that_name_a_kind_of_thing_are_no_entity_alone_but_count_in_a_phrase(analyser):
    (result,) = analyser.analyse(
        [
            "Here is the code for the function. The following command fixes the error in the application. "
            "I improved the database schema of my budget tracker with Craig, and we deployed it on Render."
        ]
    )
    names = {e.name for e in result.entities}
    assert {"database schema", "budget tracker", "Craig", "Render"} <= names
    assert not names & {"code", "function", "following command", "command", "error", "application"}
    (chat,) = analyser.analyse(["I bought a kettle and a sofa."])
    assert {"kettle", "sofa"} <= {e.name for e in chat.entities}  # everyday nouns are not technical kinds
