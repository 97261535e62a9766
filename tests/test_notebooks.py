"""The notebooks in ``notebooks/`` run top to bottom, offline, in this environment's Python."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
KERNEL = "langgraph-topics-test"


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
