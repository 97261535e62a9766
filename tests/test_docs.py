"""The README and the docs pages stay navigable, and the package installs as users install it.

The README is a front page (at most 300 lines) whose links all lead somewhere; every page under
``docs/`` is in the mkdocs navigation and the site builds with ``--strict`` (a broken link fails
it); no page names a path of a development machine; the install lines name no index the package
is not on; and ``pyproject.toml``'s runtime dependencies hold no dev tool.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))

DEV_TOOLS = {
    "pytest",
    "hypothesis",
    "ruff",
    "mypy",
    "mkdocs",
    "build",
    "ipykernel",
    "nbclient",
    "nbformat",
    "langgraph-cli",
    "langgraph-sdk",
    "matplotlib",
}
"""Packages a chat application never imports: they belong in an extra, never at runtime."""


def requirement_name(requirement: str) -> str:
    """The normalised project name a requirement string starts with."""
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert found is not None, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def prose(text: str) -> str:
    """A Markdown text without its fenced code blocks."""
    return re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.S | re.M)


def relative_links(text: str) -> list[str]:
    """The targets of a Markdown text's links and images that are not URLs or anchors."""
    targets = re.findall(r"\]\(([^)\s]+)\)", prose(text))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def nav_pages(nav: object) -> list[str]:
    """Every page file named in an mkdocs ``nav``, however nested."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    return []


def test_readme_is_a_front_page() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 300
    for heading in ("## Two commands", "## Install", "## Three ways to use it"):
        assert heading in text
    for way in ("TopicMemory", "build_graph", "langgraph dev", "TopicMemoryMiddleware"):
        assert way in text, way
    assert "![" in text  # one picture


def test_readme_links_lead_to_files() -> None:
    links = relative_links(README.read_text("utf-8"))
    assert any(link.startswith("docs/") for link in links)
    for link in links:
        assert (ROOT / link.split("#")[0]).exists(), link
    linked = {Path(link.split("#")[0]).name for link in links if link.startswith("docs/")}
    missing = {page.name for page in PAGES} - linked - {"index.md"}
    assert not missing, f"pages the README does not link to: {sorted(missing)}"


def test_docs_links_lead_to_pages() -> None:
    for page in PAGES:
        for link in relative_links(page.read_text("utf-8")):
            assert (page.parent / link.split("#")[0]).exists(), f"{page.name}: {link}"


def test_every_page_is_in_the_navigation() -> None:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))
    assert config["docs_dir"] == "docs"
    named = nav_pages(config["nav"])
    assert sorted(named) == sorted(page.name for page in PAGES)
    assert named[0] == "index.md"


def test_no_path_of_a_development_machine() -> None:
    for path in [README, *PAGES, ROOT / "mkdocs.yml"]:
        text = path.read_text("utf-8")
        for machine_path in ("/work/", "/tmp/", "/root/", "/home/", "/Users/"):
            assert machine_path not in text, f"{path.name} names {machine_path}"


def test_install_lines_name_no_index_the_package_is_not_on() -> None:
    for path in [README, *PAGES]:
        for line in path.read_text("utf-8").splitlines():
            if re.search(r"pip install [\"']?langgraph-topics", line):
                assert "@ git+" in line, f"{path.name}: {line.strip()}"


def test_runtime_dependencies_hold_no_dev_tool() -> None:
    project = PYPROJECT["project"]
    runtime = {requirement_name(r) for r in project["dependencies"]}
    assert not runtime & DEV_TOOLS, sorted(runtime & DEV_TOOLS)
    assert {"langgraph", "langchain-core", "chromadb", "tqdm", "filelock"} <= runtime
    extras = project["optional-dependencies"]
    assert {"postgres", "bench", "docs", "dev"} <= set(extras)
    dev = {requirement_name(r) for r in extras["dev"]}
    assert {"pytest", "ruff", "mypy", "build"} <= dev
    # mkdocs comes with the dev extra, through the docs extra it names
    itself = [r for r in extras["dev"] if requirement_name(r) == "langgraph-topics"]
    assert itself and "docs" in itself[0]
    assert requirement_name(extras["docs"][0]) == "mkdocs"


def test_licence_is_an_spdx_expression_with_its_file() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"  # a string: the table form is deprecated in setuptools
    assert all((ROOT / name).is_file() for name in project["license-files"])
    backend = PYPROJECT["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(7[7-9]|[89]\d)(\.\d+)*", r) for r in backend), backend


def test_make_demo_installs_the_runtime_set_only() -> None:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    demo = re.search(r"^demo:(.*)$", makefile, flags=re.M)
    assert demo is not None and "$(RUNTIME)" in demo.group(1)
    runtime = re.search(r"^\$\(RUNTIME\):.*\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert runtime is not None
    assert "-e ." in runtime.group(1) and "[dev]" not in runtime.group(1)


MKDOCS = Path(sys.executable).parent / "mkdocs"


@pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is not installed (the docs extra)")
def test_docs_build_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()
