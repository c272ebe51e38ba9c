"""ferry's own stand-in for imagehash's tests/utils.py (the PyPI sdist of
imagehash ships its tests but not this helper): the TestImageHash base
class and the checks its tests call, written from what those tests ask.
tests/python/test_imagehash_suite.py copies it beside the sdist's tests."""

import os
import unittest

from PIL import Image

import imagehash

CHECK_HASH_DEFAULT = range(2, 21)
CHECK_HASH_SIZE_DEFAULT = range(-1, 2)


class TestImageHash(unittest.TestCase):
    @staticmethod
    def get_data_image(fname=None):
        name = fname or "imagehash.png"
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", name)
        if not os.path.isfile(path):
            raise unittest.SkipTest(f"tests/data/{name} is not in imagehash's sdist")
        return Image.open(path)

    def check_hash_algorithm(self, func, image):
        """A turn of 1 degree changes few bits; a quarter turn many."""
        h = func(image)
        near = func(image.rotate(-1))
        self.assertLessEqual(h - near, 10, f"1 degree: {h} {near}")
        far = func(image.rotate(-90))
        self.assertNotEqual(h, far, f"90 degrees: {h} {far}")
        self.assertGreater(h - far, 10, f"90 degrees: {h} {far}")

    def check_hash_length(self, func, image, sizes=CHECK_HASH_DEFAULT):
        for n in sizes:
            self.assertEqual(func(image, hash_size=n).hash.size, n * n, f"hash_size={n}")

    def check_hash_stored(self, func, image, sizes=CHECK_HASH_DEFAULT):
        for n in sizes:
            h = func(image, n)
            back = imagehash.hex_to_hash(str(h))
            self.assertEqual(h, back, f"hash_size={n}: {h} != {back}")
            self.assertEqual(h - back, 0, f"hash_size={n}")

    def check_hash_size(self, func, image, sizes=CHECK_HASH_SIZE_DEFAULT):
        for n in sizes:
            with self.assertRaises(ValueError):
                func(image, n)
