"""Connections: other AI apps reaching this memory over MCP (who they are, what each may reach,
their writes waiting for approval, the access log, memory's operations as they see them), with
no protocol in it: the MCP front end (memdesk/mcp) and the window are adapters over it."""
