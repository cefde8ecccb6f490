"""Files holding secrets, the kind a mistaken policy or job spec path points at.

Each secret is a distinct, recognizable token, so a test can search any error, status line,
history or log for it. Shared by the policy, job spec, CLI and worker tests.
"""

from __future__ import annotations

import json
from pathlib import Path

ACCESS_KEY = "AKIAPRESSROOMTESTKEY7"
SECRET_KEY = "wJalrXUtnPRESSROOM/K7MDENG/bPxRfiCYzTESTKEY"
TOKEN = "ghp_PressroomTestToken0123456789abcdefXYZ"
DB_URL = "postgresql://admin:Sup3rS3cretPa55@db.internal/prod"
#: every secret the files below hold
SECRETS = (ACCESS_KEY, SECRET_KEY, TOKEN, DB_URL, "Sup3rS3cretPa55")


def write_secret_files(folder: Path) -> dict[str, Path]:
    """Secret-bearing files in ``folder``: JSON credentials, an INI file of AWS keys (with
    and without a section), and YAML that is a mapping whose keys and values are secrets
    and whose values are where a policy expects numbers, durations and patterns."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "json": (json.dumps({"aws_access_key_id": ACCESS_KEY,
                             "aws_secret_access_key": SECRET_KEY,
                             "database_url": DB_URL, TOKEN: True}), ".json"),
        "ini": (f"[default]\naws_access_key_id = {ACCESS_KEY}\n"
                f"aws_secret_access_key = {SECRET_KEY}\n", ".ini"),
        "ini-no-section": (f"aws_access_key_id = {ACCESS_KEY}\n"
                           f"aws_secret_access_key = {SECRET_KEY}\n", ".env"),
        "yaml": (f"policy_schema_version: context-policy/v1\n"
                 f"policy: {{id: '{TOKEN}!', revision: '{SECRET_KEY}'}}\n"
                 f"budget:\n  response_reserve: '{DB_URL}'\n"
                 f"blocking:\n  block_timeout: {ACCESS_KEY}\n"
                 f"security:\n  extra_secret_patterns: ['({SECRET_KEY}']\n"
                 f"transforms:\n  preserve: [{TOKEN}]\n"
                 f"trust:\n  default_by_source: {{{ACCESS_KEY}: {TOKEN}}}\n"
                 f"{TOKEN}: 1\n", ".yaml"),
        "bad-yaml": (f"token: \"{TOKEN}\\q\"\nkey: {SECRET_KEY}\n", ".yml"),
        "tabbed-yaml": (f"key:\t{SECRET_KEY}\n\tother: {TOKEN}\n", ".yaml"),
    }
    written = {}
    for name, (text, suffix) in files.items():
        path = folder / f"{name}{suffix}"
        path.write_text(text, encoding="utf-8")
        written[name] = path
    return written


def leaked(text: str) -> list[str]:
    """The secrets ``text`` contains (none, if all is well)."""
    return [secret for secret in SECRETS if secret in text]
