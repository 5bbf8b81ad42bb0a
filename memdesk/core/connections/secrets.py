"""A scan for secrets in what another app asks to write into memory.

Memory is shown to the local model and, through MCP, to other apps: an API key, a private key, a
password or a card number pasted into a note would travel with it. A write from another app that
carries one is refused with what was found (never the secret itself); the user can still write
it themselves. The patterns are the common shapes of such things, and a card number must pass
Luhn's check, so a long order number is not taken for one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("an OpenAI or Anthropic API key", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}")),
    ("an AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("a Stripe key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("a MemDesk access token", re.compile(r"\bmdk_[A-Za-z0-9_\-]{40,}")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}")),
    (
        "a password",
        re.compile(
            r"(?i)\b(?:password|passwd|passphrase|pwd|passcode|pin code|secret|api[_ -]?key|access[_ -]?token)"
            r"\s*(?:is|was|=|:)\s*[\"']?\S{4,}"
        ),
    ),
    ("a URL with a password in it", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s/:@]+:[^\s/@]+@")),
)
_CARD = re.compile(r"\b(?:\d[ -]?){12,18}\d\b")


@dataclass(frozen=True)
class SecretFound:
    kind: str


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def find_secrets(text: str) -> list[SecretFound]:
    """The kinds of secret ``text`` seems to hold (empty: none found)."""
    found = [SecretFound(kind) for kind, pattern in _PATTERNS if pattern.search(text)]
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and _luhn(digits) and len(set(digits)) > 1:
            found.append(SecretFound("a payment card number"))
            break
    return found
