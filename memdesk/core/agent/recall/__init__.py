"""Automatic recall: what memory holds for the user's message, searched, packed and placed in the
prompt before the reply. Its parts, each taking what it needs:

* ``turn``: its place in a turn (sizes the section, makes room, places the event), reading the
  context through the agent's ``PromptState``;
* ``search``: ``AutoRecall``, the search under a deadline over the sources, what is already
  visible left out, and the hits fitted to the budget;
* ``sources``: what it searches (``Memory``, the conversation's and archival memory's sources);
* ``budget``: how many tokens the section may take for one message;
* ``packing``, ``speaker``, ``versions``: how the hits are laid out, ordered and marked;
* ``events``: the memories event itself (how it is written, how an expired one shows);
* ``shown``: which memories each event showed, stored with it.
"""
