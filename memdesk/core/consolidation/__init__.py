"""Idle-time consolidation: while the user is away, a pass reads the messages since the last pass
and updates memory with the memory-editing functions only (new facts about the user, corrections,
duplicates merged, details saved to archival memory).

Small local models rarely edit memory by themselves during a chat; a pass with one job, a short
transcript and only the memory functions in its grammar gives them a better chance, and costs the
user nothing because it runs when they are idle.

Rules:

* The front end decides when the user is idle; ``due`` adds "at most every N user turns", and a pass
  over an empty or tiny stretch of conversation returns before any model call.
* ``mode``: ``off``; ``apply`` (changes go straight into memory); ``ask`` (each change is checked
  against memory without writing it, then kept as a proposal the user accepts or rejects).
* A pass never blocks the user: the front end cancels it (the ``CancelToken``) when a message
  arrives; the runtime stops between tokens and the pass keeps what it already did.
* Resumable: each change is written together with its record in one transaction, the pass's range
  of messages is stored before the first model call, and the watermark (the last message read)
  moves only when the pass finishes. A pass cancelled or cut by a crash is resumed on the same
  range, with the changes it already made listed in its prompt so it does not make them twice.
* Every change is recorded as coming from consolidation (``store.ConsolidationStore``).
"""
