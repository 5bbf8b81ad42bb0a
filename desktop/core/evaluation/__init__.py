"""Evaluations that drive the real agent: what the model gets to see, and what it answers."""
