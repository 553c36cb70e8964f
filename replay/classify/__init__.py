"""Saying what changed between a recorded request and today's: the conversation view, diffs,
volatile text.
"""
