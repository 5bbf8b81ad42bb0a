"""The main window and the controllers that wire its parts: conversation, switching agents, menus, docks, navigation."""
