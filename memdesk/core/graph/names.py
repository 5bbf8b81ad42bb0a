"""Text hygiene for the graph: what the NLP library may read, and how entity names are compared.

Chat text carries markup that a tagger trained on news would read as names (``**Ann**``, code,
URLs, emoji), so it is cleaned before analysis. Entity names are compared through a ``key``: case
and accents folded, articles and possessives dropped, so "the Louvre", "Louvre" and "LOUVRE" meet.
"""

from __future__ import annotations

import re
import unicodedata

from memdesk.core.text.words import split_words

#: Longest text analysed per source: a pasted book costs seconds of CPU and yields mostly noise.
MAX_ANALYSED_CHARS = 20_000
MIN_NAME_CHARS = 2
MAX_NAME_CHARS = 60
#: Below this share of Latin letters, or with too few English function words, the English
#: pipeline's guesses are mostly wrong: such text is skipped rather than turned into garbage.
MIN_LATIN_SHARE = 0.6
MIN_ENGLISH_SHARE = 0.08
MIN_WORDS_FOR_LANGUAGE_CHECK = 8

_CODE_BLOCK = re.compile(r"```.*?(?:```|$)|~~~.*?(?:~~~|$)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\b(?:https?://|www\.)\S+|\b[\w.+-]+@[\w-]+\.[\w.-]+\b")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]{0,200}>")
_MARKDOWN_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"(?m)^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+|\d+[.)]\s+)|[*_~|]{1,3}(?=\S)|(?<=\S)[*_~|]{1,3}|\\")
_SPACES = re.compile(r"[ \t\u00a0]+")
#: Only letters: the share of English function words is a share of words of a language, not of
#: numbers or identifiers.
_LETTERS = re.compile(r"[^\W\d_]+")

_ENGLISH_FUNCTION_WORDS = frozenset(
    "a an the and or but of to in on at for with from by is are was were be been am i you he she it we they "
    "my your his her our their me him us them this that these those not no do does did have has had will "
    "would can could should so if then than as what who when where why how just about".split()
)

_LEADING = re.compile(
    r"^(?:the|a|an|my|your|his|her|our|their|its|this|that|these|those|some|any|such)\s+", re.IGNORECASE
)
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")


def _is_symbol(char: str) -> bool:
    category = unicodedata.category(char)
    return category in ("So", "Sk", "Cs", "Co", "Cn") or char in "\u200d\ufe0f"


def clean_text(text: str) -> str:
    """Text as prose: code, URLs, HTML, Markdown markers and emoji removed; sentences kept."""
    text = text[:MAX_ANALYSED_CHARS]
    text = _CODE_BLOCK.sub(" ", text)
    text = _INLINE_CODE.sub(" ", text)
    text = _MARKDOWN_LINK.sub(r"\1", text)
    text = _URL.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    text = _MARKUP.sub("", text)
    text = "".join(" " if _is_symbol(c) else c for c in text)
    text = "".join(c for c in text if c in "\n\t" or unicodedata.category(c)[0] != "C")
    return _SPACES.sub(" ", text).strip()


def looks_english(text: str) -> bool:
    """True when the English pipeline can be trusted with ``text`` (a cheap script and
    function-word check: no language model is needed to see that Japanese is not English)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    latin = sum(1 for c in letters if "LATIN" in unicodedata.name(c, ""))
    if latin / len(letters) < MIN_LATIN_SHARE:
        return False
    words = [w.casefold() for w in _LETTERS.findall(text)]
    if len(words) < MIN_WORDS_FOR_LANGUAGE_CHECK:
        return True
    return sum(1 for w in words if w in _ENGLISH_FUNCTION_WORDS) / len(words) >= MIN_ENGLISH_SHARE


def display_name(name: str) -> str:
    """A name as shown: whitespace collapsed, articles and possessive endings dropped."""
    name = _SPACES.sub(" ", name.replace("\n", " ")).strip(" \t.,;:!?\"'()[]{}-–—")
    previous = None
    while previous != name:
        previous = name
        name = _LEADING.sub("", name).strip()
    return _POSSESSIVE.sub("", name).strip()


def name_key(name: str) -> str:
    """The lookup key: display name, case-folded, accents removed, inner punctuation spaced."""
    folded = unicodedata.normalize("NFKD", display_name(name).casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return " ".join(split_words(folded))


def valid_name(name: str) -> bool:
    """A plausible entity name: letters in it, not too short or long, not a stray symbol run."""
    shown = display_name(name)
    if not (MIN_NAME_CHARS <= len(shown) <= MAX_NAME_CHARS):
        return False
    key = name_key(shown)
    if not key or not any(c.isalpha() for c in key):
        return False
    return len(key.split()) <= 6


def tokens(name: str) -> set[str]:
    return set(name_key(name).split())


def lexical_alias(short: str, long: str) -> bool:
    """``short`` names the same thing as ``long`` by its words alone: "Ann" and "Ann Smith"
    (all of the shorter name's words are in the longer one, and the first word agrees)."""
    a, b = name_key(short).split(), name_key(long).split()
    if not a or len(a) >= len(b):
        return False
    return set(a) <= set(b) and (a[0] == b[0] or a[-1] == b[-1])
