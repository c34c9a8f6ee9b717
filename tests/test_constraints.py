"""constraints.txt, the lock CI installs from (``.ci/run``), against pyproject.toml: every
dependency is pinned, to one exact version that its range admits, and hubbub itself is
not (it is installed from the checkout)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement = Requirement(line)
        (specifier,) = requirement.specifier  # one exact version, nothing else
        assert specifier.operator == "==" and not requirement.extras and not requirement.marker
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{name} is pinned twice"
        pins[name] = Version(specifier.version)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        listed += extra
    return [Requirement(line) for line in listed]


def test_every_dependency_is_pinned_within_its_range() -> None:
    pins = _pins()
    requirements = _requirements()
    assert len(requirements) > 30  # every group of pyproject.toml was read
    wrong = []
    for requirement in requirements:
        pinned = pins.get(canonicalize_name(requirement.name))
        if pinned is None or not requirement.specifier.contains(pinned, prereleases=True):
            wrong.append(f"{requirement} (constraints.txt: {pinned})")
    assert not wrong, "refresh the lock with tools/refresh_constraints.sh: " + ", ".join(wrong)


def test_hubbub_itself_is_not_pinned() -> None:
    assert "hubbub" not in _pins()
