"""Starting the window: the first window, the passphrase, the one-instance request, then the main window."""
