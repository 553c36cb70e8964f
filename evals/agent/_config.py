"""How the reference agent is set up: tool strategy, limits and request options.

Settings come from the environment once, at the boundary (``config_from_env``);
everything below it receives an ``AgentConfig`` value.  Settings shape the
requests the agent sends, so a replay must run with the settings the tape was
recorded with, or its requests diverge from the tape.
"""

from __future__ import annotations

import enum
import urllib.parse
from collections.abc import Mapping

import attrs

ENV_STRATEGY = "EVALTAPE_AGENT_STRATEGY"
"""``forced`` (default) or ``auto``."""
ENV_MAX_TURNS = "EVALTAPE_AGENT_MAX_TURNS"
"""Most loop iterations (actions) per attempt; default 8."""
ENV_MAX_TOKENS = "EVALTAPE_AGENT_MAX_TOKENS"
"""``max_tokens`` sent with every request; default 1024, ``0`` leaves it out."""
ENV_TEMPERATURE = "EVALTAPE_AGENT_TEMPERATURE"
"""``temperature`` sent with every request; left out when unset."""
ENV_BASH_TIMEOUT = "EVALTAPE_AGENT_BASH_TIMEOUT"
"""Seconds a bash command may run; default 30."""
ENV_API_KEY = "EVALTAPE_AGENT_API_KEY"
"""Bearer token for the model API; wins over the provider's own variable."""
ENV_OPENAI_KEY = "OPENAI_API_KEY"
"""Used when ``EVALTAPE_AGENT_API_KEY`` is unset."""
ENV_ANTHROPIC_KEY = "ANTHROPIC_API_KEY"
"""Used instead for a base URL on ``anthropic.com``."""


class ConfigError(ValueError):
    """A setting has a value the agent cannot use; the message names the variable."""


class Strategy(enum.Enum):
    """How the agent gets tool calls out of the model."""

    FORCED = "forced"
    """Two forced calls per action: ``next_action`` picks a tool (or "answer"),
    then the chosen tool is forced to get its arguments.  Works with servers
    that never volunteer tool calls (llama.cpp's default chat format) and with
    frontier APIs alike."""
    AUTO = "auto"
    """One call per action: every tool offered with ``tool_choice: "auto"``;
    the model calls tools or answers in text.  For frontier APIs."""


@attrs.frozen(kw_only=True)
class AgentConfig:
    """Everything about the agent that is not the task."""

    strategy: Strategy = Strategy.FORCED
    """How tool calls are obtained."""
    max_turns: int = 8
    """Most loop iterations; each acts once (a tool, or the answer)."""
    max_tokens: int | None = 1024
    """``max_tokens`` per request; None leaves it out."""
    temperature: float | None = None
    """``temperature`` per request; None leaves it out."""
    bash_timeout: float = 30.0
    """Seconds a bash command may run before it is killed."""
    output_limit: int = 8000
    """Characters of a tool's output sent back to the model; the rest is cut."""
    api_key: str = ""
    """Bearer token for any API (``EVALTAPE_AGENT_API_KEY``); wins over the two below."""
    openai_api_key: str = ""
    """Bearer token when ``api_key`` is empty (``OPENAI_API_KEY``)."""
    anthropic_api_key: str = ""
    """Bearer token for ``anthropic.com`` when ``api_key`` is empty (``ANTHROPIC_API_KEY``)."""

    def key_for(self, base_url: str) -> str:
        """The token to send to ``base_url``; "" sends no Authorization header."""
        if self.api_key:
            return self.api_key
        host = urllib.parse.urlsplit(base_url).hostname or ""
        if host == "anthropic.com" or host.endswith(".anthropic.com"):
            return self.anthropic_api_key
        return self.openai_api_key


def _int(environ: Mapping[str, str], name: str, default: int, lo: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}: expected an integer, got {raw!r}") from None
    if value < lo:
        raise ConfigError(f"{name}: must be at least {lo}, got {value}")
    return value


def _float(environ: Mapping[str, str], name: str) -> float | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}: expected a number, got {raw!r}") from None
    if not value >= 0:
        raise ConfigError(f"{name}: must not be negative, got {raw}")
    return value


def config_from_env(environ: Mapping[str, str]) -> AgentConfig:
    """The configuration the environment asks for; ConfigError on a bad value."""
    raw = environ.get(ENV_STRATEGY, "").strip().lower() or Strategy.FORCED.value
    try:
        strategy = Strategy(raw)
    except ValueError:
        choices = ", ".join(s.value for s in Strategy)
        raise ConfigError(f"{ENV_STRATEGY}: unknown strategy {raw!r} (choose {choices})") from None
    max_tokens = _int(environ, ENV_MAX_TOKENS, 1024, 0)
    bash_timeout = _float(environ, ENV_BASH_TIMEOUT)
    return AgentConfig(
        strategy=strategy,
        max_turns=_int(environ, ENV_MAX_TURNS, 8, 1),
        max_tokens=max_tokens or None,
        temperature=_float(environ, ENV_TEMPERATURE),
        bash_timeout=bash_timeout if bash_timeout else 30.0,
        api_key=environ.get(ENV_API_KEY, ""),
        openai_api_key=environ.get(ENV_OPENAI_KEY, ""),
        anthropic_api_key=environ.get(ENV_ANTHROPIC_KEY, ""),
    )
