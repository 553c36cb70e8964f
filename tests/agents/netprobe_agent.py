"""A command agent that tries to reach a non-loopback address, then asks the model.

Run as ``python netprobe_agent.py PROMPT``.  It opens a TCP connection to
``192.0.2.1:80`` (TEST-NET-1, never routed) with a short timeout and writes
what happened, and the network interfaces it can see, to ``net.txt`` (it
skips the connection when it sees any interface but the loopback, so a test
never sends a packet off the machine); then it
posts one chat completion to ``$OPENAI_BASE_URL`` and writes the answer to
``reply.txt``.  The probe only runs when the agent is replayed (placeholder
API key), so a live run never tries it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.request

PROBE = ("192.0.2.1", 80)


def probe() -> str:
    names = ",".join(sorted(name for _, name in socket.if_nameindex()))
    if names != "lo":  # not isolated: never send a packet off this machine
        return f"skipped\ninterfaces {names}\n"
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(0.5)
    try:
        sock.connect(PROBE)
    except OSError as exc:
        outcome = f"blocked {type(exc).__name__}"
    else:
        outcome = "connected"
    finally:
        sock.close()
    return f"{outcome}\ninterfaces {names}\n"


def main() -> int:
    if os.environ.get("OPENAI_API_KEY") == "evaltape-replay":
        with open("net.txt", "w", encoding="utf-8") as handle:
            handle.write(probe())
    body = {
        "model": os.environ["EVALTAPE_MODEL"],
        "messages": [{"role": "user", "content": sys.argv[1]}],
    }
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        reply = json.loads(response.read())["choices"][0]["message"]["content"]
    with open("reply.txt", "w", encoding="utf-8") as handle:
        handle.write(reply)
    print(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
