"""Eval cases: the suite files, their validation, and drafting new cases from sessions."""
