"""Packaging hook; the configuration is in pyproject.toml. The scenarios ship as package data:
the repository keeps them in its top-level scenarios/ folder, and the wheel gets a copy as
harness/scenarios/ (every scenarios/**/*.yaml, subfolders such as zoo/ and java/ included), where
harness.run.locate.find_scenario_path finds them from any working directory. An editable install
or a clone uses the repository's scenarios/ in place. MANIFEST.in puts them into the sdist, so a
wheel built from the sdist (python -m build) has them too."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def scenario_files() -> list[Path]:
    """Every scenarios/**/*.yaml, relative to scenarios/."""
    root = HERE / "scenarios"
    return sorted(p.relative_to(root) for p in root.rglob("*.yaml"))


class BuildPyWithScenarios(build_py):
    """build_py, plus scenarios/**/*.yaml copied to <build_lib>/harness/scenarios/."""

    def _scenario_targets(self) -> list[tuple[Path, Path]]:
        if getattr(self, "editable_mode", False):  # editable: the clone's own scenarios/
            return []
        dest = Path(self.build_lib) / "harness" / "scenarios"
        return [(HERE / "scenarios" / rel, dest / rel) for rel in scenario_files()]

    def run(self) -> None:
        super().run()
        for src, dst in self._scenario_targets():
            self.mkpath(str(dst.parent))
            self.copy_file(str(src), str(dst))

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [str(d) for _, d in self._scenario_targets()]


setup(cmdclass={"build_py": BuildPyWithScenarios})
