"""TLS flags of ``pressroom worker``: mistakes are one clear error before any connection."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.errors import JobError
from worker import connect


@pytest.mark.parametrize("flags", [{"tls_key": "client.key"}, {"tls_cert": "client.pem"}])
async def test_cert_and_key_go_together(flags: dict[str, str]) -> None:
    # a lone key used to be ignored: the worker connected without TLS
    with pytest.raises(JobError, match="go together"):
        await connect("127.0.0.1:1", tls_cert=flags.get("tls_cert"),
                      tls_key=flags.get("tls_key"))


async def test_missing_tls_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(JobError, match=r"cannot read TLS file .*ca\.pem"):
        await connect("127.0.0.1:1", tls_ca=str(tmp_path / "ca.pem"))
