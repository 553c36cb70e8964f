"""The tape file: its frames, the stored form of events and exchanges, writing, reading,
journals.
"""
