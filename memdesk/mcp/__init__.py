"""The MCP front end: MemDesk's memory served to other AI apps (stdio and loopback HTTP), over the
composition root and core/connections (who may reach what). Nothing in the core imports it."""
