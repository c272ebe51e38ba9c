"""The DLPack protocol as a consumer sees it, and the buffer protocol."""
import ctypes

import numpy as np
import pytest

from ferry import _ferry


@pytest.fixture
def batch(sample):
    core = _ferry.Loader(str(sample), batch_size=4, width=8, height=6, workers=1, dtype=_ferry.F16,
                         layout=_ferry.HWC, shuffle=False)
    b = core.next()
    yield b
    del b


def test_device_and_capsule(batch):
    t = batch.images
    assert t.__dlpack_device__() == (1, 0)
    cap = t.__dlpack__()
    assert type(cap).__name__ == "PyCapsule"
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert get_name(cap) == b"dltensor"


def test_managed_tensor_fields(batch):
    """Read the DLManagedTensor through ctypes, as a C consumer would."""
    class DLDevice(ctypes.Structure):
        _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]

    class DLDataType(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16)]

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                    ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)),
                    ("byte_offset", ctypes.c_uint64)]

    t = batch.images
    cap = t.__dlpack__()
    get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
    get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    dl = DLTensor.from_address(get_ptr(cap, b"dltensor"))
    assert dl.data == batch.data_ptr and dl.ndim == 4 and dl.byte_offset == 0
    assert (dl.device.device_type, dl.device.device_id) == (1, 0)
    assert (dl.dtype.code, dl.dtype.bits, dl.dtype.lanes) == (2, 16, 1)  # kDLFloat 16
    assert [dl.shape[i] for i in range(4)] == [4, 6, 8, 3]
    assert not dl.strides  # compact


def test_numpy_from_dlpack_and_keywords(batch):
    t = batch.images
    a = np.from_dlpack(t)
    assert a.dtype == np.float16 and a.shape == (4, 6, 8, 3)
    # the keywords of the 2023 protocol are accepted
    t.__dlpack__(stream=None, max_version=(1, 0), dl_device=(1, 0), copy=False)
    t.__dlpack__(stream=-1)
    with pytest.raises(BufferError):
        t.__dlpack__(stream=5)  # no streams on the CPU
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError):
        t.__dlpack__(1)  # keyword-only


def test_copy_true_gives_a_copy(batch):
    t = batch.images
    c = np.from_dlpack(_Wrap(t, copy=True))
    a = np.from_dlpack(t)
    assert c.ctypes.data != a.ctypes.data and np.array_equal(c, a)


class _Wrap:
    """A producer that forwards to a ferry Tensor with fixed keywords."""

    def __init__(self, t, **kw):
        self.t, self.kw = t, kw

    def __dlpack__(self, **kw):
        return self.t.__dlpack__(**{**kw, **self.kw})

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_buffer_protocol(batch):
    m = memoryview(batch.images)
    assert m.format == "e" and m.itemsize == 2 and m.shape == (4, 6, 8, 3)
    assert m.c_contiguous and not m.readonly
    labels = memoryview(batch.labels)
    assert labels.format == "q" and labels.shape == (4,)


def test_strided_decode_tensor(fixtures):
    t = _ferry.decode(str(fixtures / "rgb8.png"))
    assert t.shape == (23, 37, 3) and t.dtype == "uint8" and t.owner is None
    a = np.from_dlpack(t)
    b = np.asarray(t)
    assert np.array_equal(a, b)
    assert np.array_equal(a.ravel(), np.fromfile(fixtures / "rgb8.png.rgb", np.uint8))
