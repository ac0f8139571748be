"""Maps the repository's top-level folders to the installed ``adcheck.*`` packages.

The folders keep their short names in the checkout (``gradcheck/``,
``refengine/``, ...); installed, each is a subpackage of ``adcheck`` so that a
user's own ``gradcheck.py`` or ``runner.py`` never meets adcheck's.
Everything else about the project is in pyproject.toml.
"""
from setuptools import find_packages, setup

FOLDERS = ("refengine", "gradcheck", "opinfo", "runner", "cli", "conformance")

packages = ["adcheck", "pytest_adcheck"]
package_dir = {"adcheck": "adcheck", "pytest_adcheck": "pytest_adcheck"}
for folder in FOLDERS:
    package_dir[f"adcheck.{folder}"] = folder
    packages += [f"adcheck.{name}" for name in find_packages(include=[folder, f"{folder}.*"])]

setup(packages=packages, package_dir=package_dir)
