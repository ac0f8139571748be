"""Paths of the fixture files of the adcheck command tests."""
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
WRONG_OPS = str(FIXTURES / "wrong_ops.py")
UNRULY_OPS = str(FIXTURES / "unruly_ops.py")
USER_FUNCTIONS = str(FIXTURES / "user_functions.py")

#: the arguments that select the two ops of WRONG_OPS (and nothing else)
CLI_TEST_OPS = ("cli_*", "--family", "cli_test", "--plugin", WRONG_OPS)
USER_MODULES = str(FIXTURES / "user_modules.py")
LAYER_MODELS = str(FIXTURES / "layer_models.py")
