"""MCP servers' tools for MemDesk's agents: the servers an agent may use (servers.py), one
connection per piece of work (connection.py), their tools as the agent's (tools.py)."""
