"""Let pytest explain failed asserts inside the conformance cases themselves."""
import pytest

pytest.register_assert_rewrite("conformance")
