"""The fuzzer's modules import one another by name: put this folder on the path."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
