"""The terminal front end: ``memdesk chat``, ``memdesk agents``, ``memdesk memory`` and friends."""
