"""An agent that writes its process id to ``$PID_DIR/<case id>.pid``, then asks the model once.

Tests that kill the process running an attempt (a Ray worker, a pool process) copy
it into their project and read the pid to know whom to kill.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def run(task: Any) -> str:
    (Path(task.environ["PID_DIR"]) / f"{task.case_id}.pid").write_text(str(os.getpid()))
    body = {"model": task.model, "messages": [{"role": "user", "content": task.prompt}]}
    response = task.client.post(task.base_url.rstrip("/") + "/chat/completions", json=body)
    response.raise_for_status()
    return str(response.json()["choices"][0]["message"]["content"])
