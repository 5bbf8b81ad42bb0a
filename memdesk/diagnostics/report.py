"""One line per check: what ``memdesk doctor`` prints and the Diagnostics dialog shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Check:
    """The outcome of one check. ``fix`` says what to do when it failed (empty when it passed);
    ``warning``, what the user should know about a check that passed (it does not fail the doctor)."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: str = ""

    def line(self) -> str:
        status = "FAIL" if not self.ok else "warn" if self.warning else "ok  "
        text = f"{status}  {self.name:<9} {self.detail}"
        if self.warning:
            text += f"\n      {'':<9} warning: {self.warning}"
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

    @property
    def warnings(self) -> list[Check]:
        return [check for check in self.checks if check.warning]

    def summary(self) -> str:
        if self.ok:
            warned = len(self.warnings)
            return f"All {len(self.checks)} checks passed" + (f", {warned} with a warning." if warned else ".")
        return f"{len(self.failed)} of {len(self.checks)} checks failed."

    def text(self) -> str:
        return "\n".join([*(check.line() for check in self.checks), self.summary()])

    def as_json(self) -> dict:
        return {"ok": self.ok, "checks": [asdict(check) for check in self.checks]}


def human_size(count: float) -> str:
    """A size in bytes as a check's line says it (1024 to the unit)."""
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TB"
