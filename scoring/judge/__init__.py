"""Judged scoring: an independent model grades a reply.

The judge, its request and judgement, the states and floors are public here;
``evaltape.scoring`` re-exports the common ones.
"""

from ._judge import Judge
from ._judgement import (
    Floors,
    JudgeError,
    Judgement,
    JudgeRequest,
    JudgeState,
    JudgeStatus,
)

__all__ = [
    "Floors",
    "Judge",
    "JudgeError",
    "JudgeRequest",
    "JudgeState",
    "JudgeStatus",
    "Judgement",
]
