"""The notebooks in ``notebooks/`` run top to bottom, offline, in this environment's Python.

They are stored with their outputs (``python notebooks/refresh.py`` stores fresh ones), so that
GitHub and Jupyter show what they do; the outputs never show a path of the machine that ran
them, and every heading is a Markdown heading.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "langgraph-topics-test"
_DAY = re.compile(r"\b(\d{4})-\d{2}-\d{2}\b")


@pytest.fixture(scope="module")
def kernel_specs(tmp_path_factory: pytest.TempPathFactory) -> KernelSpecManager:
    """A kernel spec running this interpreter, whatever ``python3`` kernels are installed."""
    directory = tmp_path_factory.mktemp("kernels")
    spec = directory / KERNEL
    spec.mkdir()
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"})
    )
    return KernelSpecManager(kernel_dirs=[str(directory)], ensure_native_kernel=False)


def test_there_are_notebooks() -> None:
    assert [p.stem for p in NOTEBOOKS] == [
        "01_quickstart",
        "02_prompt_tuning",
        "03_topic_map",
        "04_create_agent",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, kernel_specs: KernelSpecManager) -> None:
    notebook = nbformat.read(path, as_version=4)
    stored = [bool(cell.get("outputs")) for cell in notebook.cells if cell.cell_type == "code"]
    manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=kernel_specs)
    client = NotebookClient(
        notebook,
        km=manager,
        timeout=300,
        startup_timeout=120,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError with the failing cell's traceback
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    fresh = [bool(cell.get("outputs")) for cell in notebook.cells if cell.cell_type == "code"]
    assert stored == fresh, "the stored outputs are stale: run python notebooks/refresh.py"


def _output_texts(notebook: nbformat.NotebookNode) -> list[str]:
    texts: list[str] = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(str(output.get("text", "")))
            for kind, value in output.get("data", {}).items():
                if kind.startswith("text/"):
                    texts.append(value if isinstance(value, str) else "".join(value))
            texts.extend(output.get("traceback", []))
    return texts


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_headings_are_markdown_headings(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    markdown = [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]
    assert markdown and markdown[0].startswith("# "), "a notebook opens with its title"
    for source in markdown:
        assert not source.lstrip().startswith("md#"), f"a literal heading: {source[:40]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_are_stored_and_speak_of_the_product_only(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.get("execution_count") for cell in code), "run python notebooks/refresh.py"
    assert any(cell.get("outputs") for cell in code)
    texts = "\n".join(_output_texts(notebook))
    for place in {str(ROOT), tempfile.gettempdir(), str(Path.home()), "/tmp/", "/work/"}:
        assert place not in texts, f"an output shows the path {place}"


def test_the_topic_map_stays_in_the_conversations_time() -> None:
    """Chat turns after a recorded 2023 conversation are stamped just after it, not today."""
    notebook = nbformat.read(ROOT / "notebooks" / "03_topic_map.ipynb", as_version=4)
    years = {int(year) for year in _DAY.findall("\n".join(_output_texts(notebook)))}
    assert years == {2023}
