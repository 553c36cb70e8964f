"""What a run is rendered as: console text, JUnit/JSON/job summary, the HTML report, OTLP
traces and Langfuse scores.
"""
