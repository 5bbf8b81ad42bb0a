"""Evaluations of memory quality on public data sets, run through the same stores, rankers and
agent loop the app uses (``memdesk eval``): what conversation search finds (locomo), what the model
gets to see and what it answers (locomo_replay)."""
