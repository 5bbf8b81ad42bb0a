"""Text utilities shared by memory and documents."""
