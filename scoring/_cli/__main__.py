"""``python -m scoring._cli`` runs the evaltape command."""

from evaltape.scoring._cli.main import cli

cli()
