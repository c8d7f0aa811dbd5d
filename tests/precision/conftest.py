import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import shutil
import tempfile

import pytest


@pytest.fixture
def short_dir():
    """A fresh directory with a short absolute path (DUMP_MEMORY_PATH allows 50 characters)."""
    d = tempfile.mkdtemp(prefix="pd", dir="/tmp")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)
