"""The scripted provider: a hand-written list of responses rendered as one API's exchanges and
written as a tape.
"""
