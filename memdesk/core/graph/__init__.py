"""Knowledge-graph memory: entities, mentions and dated facts per agent, in the one SQLite file.

store        KnowledgeGraph, made of: changes (history and revert rows), entities (lookup,
             resolution; name_vectors: merging by meaning), facts (mentions, facts, ranking),
             edits (the user's, with undo); records: the types they share
names        text hygiene and name keys; relations: contradiction rules
nlp          entities and dependency facts (the only module importing spaCy)
extraction   the resumable queue that turns new messages and passages into graph rows
model_facts  facts from the chat model under an entity grammar
render       the subgraph text and the "top entities" prompt section
(the agent's tools knowledge_graph_search and knowledge_graph_insert are in memdesk.core.tools.graph_tools)
transfer     export_graph / import_graph for agent files
"""

from memdesk.core.graph.store import Edit, Entity, Fact, KnowledgeGraph

__all__ = ["Edit", "Entity", "Fact", "KnowledgeGraph"]
