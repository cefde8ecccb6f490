"""The embedded Temporal dev server for a benchmark whose stdout is one JSON document.

``temporal server start-dev`` prints a banner on the process's stdout, which would corrupt
the JSON a benchmark prints there; ``start_quiet_dev_server`` points file descriptor 1 at
stderr while the server starts and puts it back after. (Three scripts did this by hand; one
leaked the saved descriptor.)
"""

from __future__ import annotations

import os
import sys

from temporalio.testing import WorkflowEnvironment

from workflows.temporal_config import DATA_CONVERTER, temporal_binary
from workflows.visibility import SEARCH_ATTRIBUTES


async def start_quiet_dev_server() -> WorkflowEnvironment:
    """A dev server with Pressroom's converter and search attributes (``shutdown`` it)."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        return await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_binary()), data_converter=DATA_CONVERTER,
            dev_server_log_level="error", search_attributes=SEARCH_ATTRIBUTES)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
