"""The bubblewrap sandbox: commands a tape, a model or a verify step chose, confined."""

from ._limits import SandboxPolicy
from ._sandbox import Sandbox, SandboxError, SandboxResult, run_sandboxed

__all__ = ["Sandbox", "SandboxError", "SandboxPolicy", "SandboxResult", "run_sandboxed"]
