"""The fast paths of redaction find exactly what running every rule's regex finds.

The built-in rules are tried only where one of their leading literals occurs,
no rule runs over data shorter than its shortest match, and header values
without secrets are remembered.  The same rules wrapped in a group (which
the fast paths do not recognise) are the reference.
"""

from __future__ import annotations

import random

import attrs
import pytest

from evaltape.recorder.redact import Redactor
from evaltape.recorder.redact._rules import DEFAULT_RULES

SECRETS = [
    b"sk-ant-api03-" + b"A1b2C3d4E5f6G7h8I9j0kLmN",
    b"sk-proj-" + b"Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2",
    b"sk-lf-1234abcd-5678",
    b"pk-lf-abcdef12-3456",
    b"AKIAABCDEFGHIJKLMNOP",
    b"ghp_" + b"a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7",
    b"github_pat_" + b"11ABCDEFG0123456789_abcdefghij",
    b"AIza" + b"SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    b"xoxb-1234567890-abcdefghij",
    b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_nature-x",
    b"Authorization: Bearer Qw3rTy7uI9oP1aS5dF8g",
    b"https://h/x?api_key=Zq8Xw7Cv6Bn5Mm4&token=Lk9Jh8Gf7Dd6Ss5A",
    b'{"api_key": "Zq8Xw7Cv6Bn5Mm4Lk9Jh8Gf7"}',
    b'{\\"client_secret\\": \\"Aa1Bb2Cc3Dd4Ee5Ff6Gg7\\"}',
    b"PASSWORD = 'Qz1Wx2Ec3Rv4Tb5Yn6Um7'",
    b"access_token: q1w2e3r4t5y6u7i8o9p0a1s2",
    b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1b2c3\n-----END RSA PRIVATE KEY-----",
]
NOISE = [
    b"sk-",
    b"api",
    b"token",
    b"secret",
    b"A",
    b"gh",
    b"eyJ",
    b"bearer ",
    b"?",
    b"&",
    b";",
    b" ",
    b'"',
    b":",
    b"=",
    b"x",
    b"9",
    b"REDACTED****",
]


def _reference() -> Redactor:
    rules = tuple(attrs.evolve(r, pattern=f"(?:{r.pattern})") for r in DEFAULT_RULES)
    return Redactor(rules=rules)


@pytest.mark.slow
def test_scans_of_mixed_data_equal_the_plain_regex_scans() -> None:
    fast, slow = Redactor(), _reference()
    rng = random.Random(7)
    for _ in range(300):
        parts = [rng.choice(SECRETS if rng.random() < 0.2 else NOISE) for _ in range(40)]
        data = b"".join(parts)
        for variant in (data, data.upper(), data[: rng.randrange(len(data) + 1)]):
            assert fast.scan_bytes(variant) == slow.scan_bytes(variant)
            assert fast.redact_bytes(variant) == slow.redact_bytes(variant)
    found = {f.kind for s in SECRETS for f in fast.scan_bytes(s)}
    assert len(found) >= 12


def test_data_shorter_than_any_secret_is_left_as_it_is() -> None:
    redactor = Redactor()
    assert redactor.redact_bytes(b"sk-ant-x") == b"sk-ant-x"
    assert redactor.scan_bytes(b"xoxb-12345678") == ()
    assert redactor.scan_bytes(b"xoxb-1234567890") != ()


def test_a_remembered_clean_header_value_does_not_hide_a_later_secret() -> None:
    redactor = Redactor()
    headers = (("user-agent", "agent/1.0"), ("x-note", "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"))
    for _ in range(3):
        out = dict(redactor.redact_headers(headers))
        assert out["user-agent"] == "agent/1.0"
        assert out["x-note"].startswith("REDACTED")
        assert "Ab1Cd2" not in out["x-note"]
