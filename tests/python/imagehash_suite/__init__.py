# the sdist's tests import TestImageHash from the package (test_hash_is_constant)
from .utils import TestImageHash  # noqa: F401
