"""Crafted hostile files for tests/hostile/run.py, made from bytes here (no
tool beyond Python's standard library): each function writes one file and
returns its path (tests/gen/gen_hostile.py makes the decoders' JPEG, BMP
and HEIC bytes; this file the rest). The kinds are those of the two attack reviews (issues 16
and 52): decoder bombs (scans, pixels, frames, inflated bytes), truncated and
garbled files, and containers whose boxes lie."""
import pathlib
import struct
import sys
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gen"))
import gen_hostile  # noqa: E402  the decoders' crafted files, one place
SAMPLE_JPEG = ROOT / "data" / "sample" / "class0" / "p0000.jpg"
FIXTURES = ROOT / "tests" / "fixtures"


def _segments(jpeg):
    """A JPEG's marker segments as (marker, start, end) up to EOI; a scan's
    end includes its entropy-coded data."""
    out, i = [], 2
    while i + 4 <= len(jpeg):
        assert jpeg[i] == 0xFF, i
        m = jpeg[i + 1]
        if m == 0xD9:
            break
        n = struct.unpack(">H", jpeg[i + 2:i + 4])[0]
        j = i + 2 + n
        if m == 0xDA:
            while not (jpeg[j] == 0xFF and jpeg[j + 1] != 0 and not 0xD0 <= jpeg[j + 1] <= 0xD7):
                j += 1
        out.append((m, i, j))
        i = j
    return out


def scan_bomb(path, side=4096, scans=5001):
    """A progressive grey JPEG of side x side whose AC scan repeats: each
    scan costs a pass over every block (the first review's 86 s, the
    second's 17 s at 1 MB), while the file stays small."""
    path.write_bytes(gen_hostile.flat_progressive_jpeg(side, scans - 1))
    return path


def bmp(path, width, height, keep_bytes=None):
    """A 24-bit BMP header for width x height; its pixel rows cut to
    keep_bytes (None: all of them; 0: none, the 54-byte header alone)."""
    size = ((width * 3 + 3) & ~3) * height
    kept = size if keep_bytes is None else keep_bytes
    pixels = bytes((x * 7) & 0xFF for x in range(kept))
    path.write_bytes(gen_hostile.bmp_header(width, height, size=54 + size) + pixels)
    return path


def gif_frames(path, screen=10000, frames=30):
    """A GIF whose logical screen is screen x screen and whose frames are
    each one pixel: a reader that makes a canvas per frame pays screen^2
    a frame for a file of a few hundred bytes."""
    out = b"GIF89a" + struct.pack("<HH", screen, screen) + b"\x00\x00\x00"
    for _ in range(frames):
        out += b"\x21\xf9\x04\x00\x01\x00\x00\x00"  # graphic control: 1/100 s
        out += b"\x2c" + struct.pack("<HHHH", 0, 0, 1, 1) + b"\x80"  # local table of 2
        out += b"\x00\x00\x00\xff\xff\xff"
        out += b"\x02\x02\x44\x01\x00"  # LZW: clear, 0, end
    path.write_bytes(out + b"\x3b")
    return path


def png(path, width, height, color=2, idat=b""):
    """A PNG of the given header whose IDAT is `idat` as it is."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) +
                     chunk(b"IEND", b""))
    return path


def jpeg_truncated(path, keep=0.5):
    data = SAMPLE_JPEG.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])
    return path


def jpeg_sof(path, marker):
    """The sample JPEG with its frame marker replaced (0xC3: lossless)."""
    data = bytearray(SAMPLE_JPEG.read_bytes())
    for m, start, _ in _segments(bytes(data)):
        if m == 0xC0 or m == 0xC2:
            data[start + 1] = marker
            break
    path.write_bytes(bytes(data))
    return path


def flipped(path, source, flips=50, seed=7):
    """`source` (an ISO BMFF file: HEIC, MP4) with `flips` bits flipped in
    its mdat's payload."""
    path.write_bytes(gen_hostile.garbled(pathlib.Path(source).read_bytes(), seed, flips))
    return path


def mp4_box(data, name):
    """The offset of the first box `name` (4 bytes) in an MP4's bytes."""
    i = data.find(name)
    assert i >= 4, name
    return i - 4


def mp4_bad_stsz(path, source):
    """An MP4 whose stsz (sample sizes) says far more samples than its
    box holds: the moov box is whole, its sample table lies."""
    data = bytearray(pathlib.Path(source).read_bytes())
    at = mp4_box(data, b"stsz")
    # box: size, 'stsz', version/flags, sample_size (0), sample_count
    struct.pack_into(">I", data, at + 16, 0x7FFFFFF0)
    path.write_bytes(bytes(data))
    return path


def tiff_bad_rows(path):
    """A little-endian 8-bit grey TIFF whose one strip is far shorter than
    its RowsPerStrip and ImageLength say."""
    w, h = 64, 64
    entries = [(256, 3, 1, w), (257, 3, 1, h), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
               (273, 4, 1, 0), (277, 3, 1, 1), (278, 3, 1, h), (279, 4, 1, 10)]
    ifd_at = 8
    data_at = ifd_at + 2 + 12 * len(entries) + 4
    entries[5] = (273, 4, 1, data_at)
    ifd = struct.pack("<H", len(entries))
    for tag, typ, n, v in entries:
        ifd += struct.pack("<HHI", tag, typ, n) + (struct.pack("<HH", v, 0) if typ == 3 else
                                                   struct.pack("<I", v))
    ifd += struct.pack("<I", 0)
    path.write_bytes(b"II*\x00" + struct.pack("<I", ifd_at) + ifd + bytes(10))
    return path
