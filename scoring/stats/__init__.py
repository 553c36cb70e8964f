"""Statistics: pure functions over counts, on scipy."""
