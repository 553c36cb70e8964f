"""Keeping secrets off tapes and volatile text out of matching: secret rules, the scanner, the
redactor, scrubbing.
"""
