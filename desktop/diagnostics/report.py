"""One line per check: what ``memdesk doctor`` prints and the Diagnostics dialog shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Check:
    """The outcome of one check. ``fix`` says what to do when it failed (empty when it passed)."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{'ok  ' if self.ok else 'FAIL'}  {self.name:<9} {self.detail}"
        return f"{text}\n      {'':<9} fix: {self.fix}" if self.fix else text


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    def summary(self) -> str:
        if self.ok:
            return f"All {len(self.checks)} checks passed."
        return f"{len(self.failed)} of {len(self.checks)} checks failed."

    def text(self) -> str:
        return "\n".join([*(check.line() for check in self.checks), self.summary()])

    def as_json(self) -> dict:
        return {"ok": self.ok, "checks": [asdict(check) for check in self.checks]}
