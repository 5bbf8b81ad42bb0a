"""What every part of the window shares: the one error path, literal text, tables, colours, the message box."""
