"""The README's embedding examples run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def _python_blocks(section: str) -> list[str]:
    text = README.read_text("utf-8")
    start = text.index(f"## {section}")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def test_application_examples_run(tmp_path: Path) -> None:
    blocks = _python_blocks("Use it in an application")
    assert len(blocks) == 2
    for number, block in enumerate(blocks):
        done = subprocess.run(
            [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, f"block {number}: {done.stderr[-2000:]}"
    assert (tmp_path / "memory" / "checkpoints.sqlite").is_file()
