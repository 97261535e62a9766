"""Run the notebooks top to bottom and store their outputs, so GitHub and Jupyter show them.

Usage (from the repository root, with the project installed)::

    .venv/bin/python notebooks/refresh.py            # every notebook
    .venv/bin/python notebooks/refresh.py 03_topic_map

Each notebook runs offline in a fresh kernel of this interpreter (whatever ``python3`` kernels
are installed), from the ``notebooks/`` folder. A notebook whose outputs would show a path of
this machine (its scratch folders, the checkout, the home folder) is refused and left as it
was: the outputs speak of the product, never of where it ran. ``tests/test_notebooks.py``
executes the same notebooks and checks the stored outputs.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
KERNEL = "langgraph-topics-refresh"
LANGUAGE_INFO = {"name": "python"}
"""What the stored notebooks say of their language: the interpreter's exact version would
change the files at every refresh on another machine."""


def machine_paths() -> list[str]:
    """Paths of this machine that no output may show."""
    places = {str(HERE.parent), tempfile.gettempdir(), str(Path.home()), "/tmp/"}
    return sorted(p for p in places if len(p) > 1)


def output_texts(notebook: nbformat.NotebookNode) -> Iterator[str]:
    """The text of every output (streams, results, errors; images are not text)."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if "text" in output:
                yield str(output["text"])
            for kind, value in output.get("data", {}).items():
                if kind.startswith("text/") or kind.endswith("json"):
                    yield value if isinstance(value, str) else json.dumps(value)
            yield from output.get("traceback", [])


def run(path: Path, specs: KernelSpecManager) -> nbformat.NotebookNode:
    """The notebook at ``path``, executed; raises with the failing cell's traceback."""
    notebook: nbformat.NotebookNode = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        notebook,
        km=KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs),
        timeout=600,
        startup_timeout=120,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    notebook.metadata["language_info"] = dict(LANGUAGE_INFO)
    return notebook


def refresh(names: Sequence[str]) -> int:
    """Execute and store the named notebooks (all when none); 1 when one was refused."""
    paths = sorted(HERE.glob("*.ipynb"))
    if names:
        wanted = {Path(n).stem for n in names}
        unknown = wanted - {p.stem for p in paths}
        if unknown:
            print(f"no such notebook: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        paths = [p for p in paths if p.stem in wanted]
    refused = 0
    with tempfile.TemporaryDirectory(prefix="lgt-kernels-") as kernels:
        spec = Path(kernels) / KERNEL
        spec.mkdir()
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        spec.joinpath("kernel.json").write_text(
            json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"})
        )
        specs = KernelSpecManager(kernel_dirs=[kernels], ensure_native_kernel=False)
        for path in paths:
            notebook = run(path, specs)
            shown = [p for p in machine_paths() if any(p in t for t in output_texts(notebook))]
            if shown:
                print(f"{path.name}: outputs show {', '.join(shown)}; not stored", file=sys.stderr)
                refused += 1
                continue
            nbformat.write(notebook, path)  # type: ignore[no-untyped-call]
            print(f"{path.name}: refreshed")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(refresh(sys.argv[1:]))
