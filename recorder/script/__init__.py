"""The scripted provider: a hand-written list of responses rendered as one API's exchanges
and written as a tape (docs/scripted-provider.md)."""

from ._provider import (
    SCRIPT_MATCH_ANY,
    SCRIPT_MATCH_HEADER,
    ErrorReply,
    Reply,
    Script,
    ScriptedCall,
    ScriptedUsage,
    ScriptError,
    ScriptFlavor,
    load_script,
    parse_script,
)
from ._tape import script_exchanges, write_script_tape

__all__ = [
    "SCRIPT_MATCH_ANY",
    "SCRIPT_MATCH_HEADER",
    "ErrorReply",
    "Reply",
    "Script",
    "ScriptError",
    "ScriptFlavor",
    "ScriptedCall",
    "ScriptedUsage",
    "load_script",
    "parse_script",
    "script_exchanges",
    "write_script_tape",
]
