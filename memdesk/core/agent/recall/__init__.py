"""Automatic recall: what memory holds for the user's message, searched, packed and placed in the prompt."""
