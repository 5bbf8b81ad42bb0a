"""Text utilities every layer that reads text shares: the one word tokenizer (words.py) and
chunking for embeddings (chunking.py). A layer of its own below the others: it imports only base."""
