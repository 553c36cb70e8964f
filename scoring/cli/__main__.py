"""``python -m scoring._cli`` runs the evaltape command."""

from .main import cli

cli()
