"""What a person reads on the terminal: each command's summary, progress lines, comparisons,
safe text.
"""
