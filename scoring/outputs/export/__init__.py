"""OTLP spans and Langfuse scores for live attempts."""
