"""The dialogs the window opens: settings, backups, forget, welcome, consent, passphrase, diagnostics, models,
privacy."""
