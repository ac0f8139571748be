"""Files are written whole or not at all (runner.files)."""
from __future__ import annotations

import os
import stat

import pytest

from adcheck.runner.files import stage, write_atomic


def test_a_write_replaces_the_file_and_leaves_nothing_beside_it(tmp_path):
    path = tmp_path / "report.xml"
    path.write_text("old")
    write_atomic(path, "new")
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["report.xml"]


def test_the_file_gets_the_permissions_of_an_ordinary_new_file(tmp_path):
    mask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.json", "{}")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_until_committed_the_old_file_is_what_readers_see(tmp_path):
    path = tmp_path / "report.html"
    path.write_text("old")
    staged = stage(path, "new, not yet in place")
    assert path.read_text() == "old"
    staged.rewrite("new")
    staged.commit()
    assert path.read_text() == "new"


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    path = tmp_path / "baseline.json"
    path.write_text("old")

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]


def test_a_missing_folder_is_an_oserror(tmp_path):
    with pytest.raises(OSError):
        write_atomic(tmp_path / "no" / "such" / "file.xml", "x")
