"""scripts/readme_examples.py: differing examples found, and rewritten in place
with ``--write`` (those that elide lines left alone), each at its own lines."""
import importlib.util
import os
import stat
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "scripts" / "readme_examples.py"

DOC = """# Doc

```
$ adcheck one
old line
[exit status 1]
```

Text between.

```
$ adcheck two
a
...
```

```
$ adcheck three
stale
```

```
$ adcheck four \\
    --long
old four
```

```
$ adcheck missing
kept
```
"""


@pytest.fixture
def script(tmp_path, monkeypatch):
    # a stand-in `adcheck` on PATH: prints its argument's lines, exits as told
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "adcheck"
    fake.write_text('#!/bin/sh\ncase "$1" in\n'
                    '  one) printf "new line\\nsecond line\\n"; exit 1;;\n'
                    '  two) printf "a\\nb\\nc\\n"; exit 2;;\n'
                    '  three) printf "fresh\\n";;\n'
                    '  four) printf "four with $2\\n";;\n'
                    '  missing) echo "Error: no such file"; exit 2;;\nesac\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    spec = importlib.util.spec_from_file_location("readme_examples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "readme_examples", module)   # (its dataclasses)
    spec.loader.exec_module(module)
    return module


def test_write_replaces_each_differing_output_at_its_own_lines(script, tmp_path, capsys):
    doc = tmp_path / "doc.md"
    doc.write_text(DOC)
    (tmp_path / "cwd").mkdir()
    assert script.main([str(doc), "--cwd", str(tmp_path / "cwd"), "--write"]) == 1
    out = capsys.readouterr().out
    assert "not written: it elides lines" in out     # `two` exits 2, shown 0
    text = doc.read_text()
    assert "$ adcheck one\nnew line\nsecond line\n[exit status 1]\n```" in text
    assert "$ adcheck two\na\n...\n```" in text       # elided: left for a person
    assert "$ adcheck three\nfresh\n```" in text
    assert "old line" not in text and "stale" not in text
    # a command continued on the next line runs whole; its output goes below it
    assert "$ adcheck four \\\n    --long\nfour with --long\n```" in text
    # a usage error the file does not show means the example is broken: not written
    assert "$ adcheck missing\nkept\n```" in text
    # and now the rewritten ones match
    assert script.main([str(doc), "--cwd", str(tmp_path / "cwd"), "-k", "one",
                        "-k", "three"]) == 0
