"""Decisions over results: the gate, comparisons, the replay decision, flips, quarantine, A/B."""
