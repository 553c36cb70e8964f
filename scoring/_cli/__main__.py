"""``python -m scoring._cli`` runs the evaltape command."""

from scoring._cli.main import cli

cli()
