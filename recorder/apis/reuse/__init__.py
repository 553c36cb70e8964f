"""Reusing one session's request decoding from turn to turn, so a fold stays linear in the turns."""
