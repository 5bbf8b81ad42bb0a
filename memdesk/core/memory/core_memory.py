"""Core memory: labelled text blocks that are always in the context window.

The model edits them through functions (errors are ToolErrors it can read); the user edits them
in the GUI or CLI. Every write bumps ``version`` so an editor can detect that the agent changed a
block underneath it (no lost updates), and is recorded in the memory history (who, why, before
and after) in the same transaction: this class is the only writer of ``memory_blocks``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memdesk.core.base.clock import Clock, iso, parse_iso
from memdesk.core.base.errors import MemDeskError, ToolError
from memdesk.core.memory.history import AGENT, BLOCK, CONFIGURE, CREATE, DELETE, UPDATE, USER, Cause, MemoryHistory
from memdesk.core.storage import Database

DEFAULT_LIMIT = 2000


@dataclass(frozen=True)
class Block:
    id: int
    agent_id: int
    label: str
    value: str
    limit: int
    description: str
    read_only: bool
    updated_by: str  # the source of the last change: agent, user, import, consolidation
    version: int
    updated_at: datetime | None = None

    @property
    def chars(self) -> int:
        return len(self.value)


class StaleBlockError(MemDeskError):
    """The block changed since the editor loaded it."""

    def __init__(self, block: Block) -> None:
        super().__init__(f"The {block.label} block was changed by the {block.updated_by} while you were editing it")
        self.current = block


_COLUMNS = "id, agent_id, label, value, char_limit, description, read_only, updated_by, version, updated_at, position"


def _block(row) -> Block:
    return Block(row[0], row[1], row[2], row[3], row[4], row[5], bool(row[6]), row[7], row[8], parse_iso(row[9]))


def valid_label(label: str) -> bool:
    """Letters, digits and ``_``, with ``-``, ``.`` and ``/`` allowed too: Letta agents name blocks
    like ``system/human/work``. No spaces or markup: labels are tag names in the prompt."""
    return bool(label) and label.replace("_", "").replace("-", "").replace("/", "").replace(".", "").isalnum()


def _meta(block: Block) -> dict:
    return {"limit": block.limit, "description": block.description, "read_only": block.read_only}


class CoreMemory:
    def __init__(self, db: Database, clock: Clock, history: MemoryHistory | None = None) -> None:
        self._db = db
        self._clock = clock
        self.history = history or MemoryHistory(db, clock)

    # --- reading ---------------------------------------------------------------------------
    def blocks(self, agent_id: int) -> list[Block]:
        rows = self._db.query(
            f"SELECT {_COLUMNS} FROM memory_blocks WHERE agent_id = ? ORDER BY position, id", (agent_id,)
        )
        return [_block(r) for r in rows]

    def get(self, agent_id: int, label: str) -> Block | None:
        row = self._db.query_one(
            f"SELECT {_COLUMNS} FROM memory_blocks WHERE agent_id = ? AND label = ?", (agent_id, label)
        )
        return _block(row) if row else None

    def render(self, agent_id: int) -> str:
        """The memory section of the prompt: each block with its label, fill level and description
        (what belongs in it: an empty block says so without placeholder text to edit around)."""
        parts = []
        for block in self.blocks(agent_id):
            flags = ", read-only" if block.read_only else ""
            about = f' description="{block.description.replace(chr(34), chr(39))}"' if block.description else ""
            header = f'<{block.label} characters="{block.chars}/{block.limit}"{about}{flags}>'
            parts.append(f"{header}\n{block.value}\n</{block.label}>")
        return "\n".join(parts)

    # --- user operations -------------------------------------------------------------------
    def create(
        self,
        agent_id: int,
        label: str,
        value: str = "",
        *,
        limit: int = DEFAULT_LIMIT,
        description: str = "",
        read_only: bool = False,
        source: str = USER,
        cause: Cause | None = None,
    ) -> Block:
        label = label.strip()
        if not valid_label(label):
            raise MemDeskError(f"Block label {label!r} must be letters, digits or underscores (or - . / between them)")
        if len(value) > limit:
            raise MemDeskError(f"The {label} block's text has {len(value)} characters, over its limit of {limit}")
        if self.get(agent_id, label):
            raise MemDeskError(f"A block named {label} already exists")
        with self._db.transaction():
            position = self._db.scalar(
                "SELECT COALESCE(MAX(position), -1) + 1 FROM memory_blocks WHERE agent_id = ?", (agent_id,)
            )
            self._db.execute(
                "INSERT INTO memory_blocks(agent_id, label, value, char_limit, description, read_only, position,"
                " updated_at, updated_by)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (agent_id, label, value, limit, description, int(read_only), position, iso(self._clock.now()), source),
            )
            block = self._written(agent_id, label)
            self.history.record(
                agent_id,
                BLOCK,
                block.id,
                CREATE,
                source=source,
                after=value,
                label=label,
                after_meta=_meta(block),
                cause=cause,
            )
        return block

    def delete(self, agent_id: int, label: str, *, source: str = USER, cause: Cause | None = None) -> None:
        with self._db.transaction():
            block = self.get(agent_id, label)
            if block is None:
                return
            position = self._db.scalar("SELECT position FROM memory_blocks WHERE id = ?", (block.id,))
            self._db.execute("DELETE FROM memory_blocks WHERE id = ?", (block.id,))
            self.history.record(
                agent_id,
                BLOCK,
                block.id,
                DELETE,
                source=source,
                before=block.value,
                label=label,
                before_meta={**_meta(block), "position": position},
                cause=cause,
            )

    def set_value(
        self,
        agent_id: int,
        label: str,
        value: str,
        *,
        expected_version: int | None = None,
        source: str = USER,
        cause: Cause | None = None,
    ) -> Block:
        """A user edit (or an import's, a consolidation's: ``source``). With ``expected_version``,
        refuses to overwrite a newer edit by the agent or anyone else."""
        with self._db.transaction():
            block = self._require(agent_id, label, MemDeskError)
            if expected_version is not None and block.version != expected_version:
                raise StaleBlockError(block)
            if len(value) > block.limit:
                raise MemDeskError(
                    f"The {label} block's text has {len(value)} characters, over its limit of {block.limit}"
                )
            return self._write(block, value, by=source, cause=cause)

    def configure(
        self,
        agent_id: int,
        label: str,
        *,
        limit: int | None = None,
        read_only: bool | None = None,
        description: str | None = None,
        source: str = USER,
        cause: Cause | None = None,
    ) -> Block:
        with self._db.transaction():
            block = self._require(agent_id, label, MemDeskError)
            new_limit = block.limit if limit is None else limit
            if new_limit < len(block.value):
                raise MemDeskError(
                    f"The {label} block already holds {len(block.value)} characters, more than {new_limit}"
                )
            self._db.execute(
                "UPDATE memory_blocks SET char_limit = ?, read_only = ?, description = ?, version = version + 1"
                " WHERE id = ?",
                (
                    new_limit,
                    int(block.read_only if read_only is None else read_only),
                    block.description if description is None else description,
                    block.id,
                ),
            )
            changed = self._written(agent_id, label)
            if _meta(changed) != _meta(block):
                self.history.record(
                    agent_id,
                    BLOCK,
                    block.id,
                    CONFIGURE,
                    source=source,
                    label=label,
                    before_meta=_meta(block),
                    after_meta=_meta(changed),
                    cause=cause,
                )
            return changed

    # --- agent operations (errors go back to the model) -------------------------------------
    def append(
        self, agent_id: int, label: str, content: str, *, cause: Cause | None = None, source: str = AGENT
    ) -> Block:
        block = self._editable(agent_id, label)
        new_value = block.value + "\n" + content if block.value else content
        self._check_limit(block, new_value)
        return self._write(block, new_value, by=source, cause=cause)

    def replace(
        self,
        agent_id: int,
        label: str,
        old_content: str,
        new_content: str,
        *,
        cause: Cause | None = None,
        source: str = AGENT,
    ) -> Block:
        block = self._editable(agent_id, label)
        if not old_content:
            raise ToolError("old_content must not be empty; use core_memory_append to add text")
        if old_content not in block.value:
            raise ToolError(f"Content {old_content!r} not found in the {label} block (it must match exactly)")
        new_value = block.value.replace(old_content, new_content)
        if not new_content:  # a deletion: do not leave an empty line where the text was
            new_value = new_value.replace("\n\n", "\n").strip("\n")
        self._check_limit(block, new_value)
        return self._write(block, new_value, by=source, cause=cause)

    # --- helpers ---------------------------------------------------------------------------
    def _written(self, agent_id: int, label: str) -> Block:
        """The block this transaction just wrote, as it reads now."""
        block = self.get(agent_id, label)
        assert block is not None  # the same transaction wrote it
        return block

    def _require(self, agent_id: int, label: str, error: type[MemDeskError]) -> Block:
        block = self.get(agent_id, label)
        if block is None:
            labels = ", ".join(b.label for b in self.blocks(agent_id)) or "none"
            raise error(f"No memory block named {label!r} (blocks: {labels})")
        return block

    def _editable(self, agent_id: int, label: str) -> Block:
        block = self._require(agent_id, label, ToolError)
        if block.read_only:
            raise ToolError(f"The {label} block is read-only; you cannot edit it")
        return block

    @staticmethod
    def _check_limit(block: Block, new_value: str) -> None:
        if len(new_value) > block.limit:
            raise ToolError(
                f"Edit failed: the {block.label} block would have {len(new_value)} characters, over its limit of "
                f"{block.limit}. Shorten it (core_memory_replace) or store details in archival memory."
            )

    def _write(self, block: Block, value: str, *, by: str, cause: Cause | None) -> Block:
        with self._db.transaction():
            self._db.execute(
                "UPDATE memory_blocks SET value = ?, updated_at = ?, updated_by = ?, version = version + 1"
                " WHERE id = ?",
                (value, iso(self._clock.now()), by, block.id),
            )
            if value != block.value:
                self.history.record(
                    block.agent_id,
                    BLOCK,
                    block.id,
                    UPDATE,
                    source=by,
                    before=block.value,
                    after=value,
                    label=block.label,
                    cause=cause,
                )
        return self._written(block.agent_id, block.label)
