"""Evaluations of memory quality on public data sets, run through the same stores and rankers the
agent uses (``memdesk eval``)."""
