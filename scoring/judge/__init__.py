"""Judged scoring: an independent model grades a reply."""
