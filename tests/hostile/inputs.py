"""Crafted hostile files for tests/hostile/run.py, made from bytes here (no
tool beyond Python's standard library): each function writes one file and
returns its path. The kinds are those of the two attack reviews (issues 16
and 52): decoder bombs (scans, pixels, frames, inflated bytes), truncated and
garbled files, and containers whose boxes lie."""
import pathlib
import struct
import zlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
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


def _dqt_dht_gray():
    """A one-table DQT (all 1s) and DHT tables (DC: one symbol, 0; AC: the
    end-of-band run of 2^14 blocks, EOB14, and EOB0) for a flat grey image."""
    dqt = b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + bytes([1] * 64)
    # DC table 0: one code of length 1 for category 0
    dc = bytes([0x00]) + bytes([1] + [0] * 15) + bytes([0])
    # AC table 0 (class 1, id 0): codes of length 1 and 2 for EOB0 (0x00)
    # and EOB14 (0xE0)
    ac = bytes([0x10]) + bytes([1, 1] + [0] * 14) + bytes([0x00, 0xE0])
    dht = b"\xff\xc4" + struct.pack(">H", 2 + len(dc) + len(ac)) + dc + ac
    return dqt + dht


def scan_bomb(path, side=4096, scans=5001):
    """A progressive grey JPEG of side x side whose AC scan repeats: each
    scan costs a pass over every block (the first review's 86 s, the
    second's 17 s at 1 MB), while the file stays small."""
    sof = b"\xff\xc2" + struct.pack(">HBHHB", 11, 8, side, side, 1) + b"\x01\x11\x00"
    blocks = (side // 8) ** 2
    # DC first scan: every block's DC difference is category 0 (code '0')
    dc_bits = blocks  # one 0 bit a block
    dc_data = bytes((dc_bits + 7) // 8)
    dc_scan = b"\xff\xda" + struct.pack(">HB", 8, 1) + b"\x01\x00" + b"\x00\x00\x00" + dc_data
    # AC scan, band 1..63: EOB runs of 2^14 + extra bits (all ones: 2^15-1
    # blocks a run would overflow; 14 zero bits give 2^14 blocks a run)
    runs = -(-blocks // (1 << 14))
    bits = "".join("10" + "0" * 14 for _ in range(runs))
    bits += "1" * (-len(bits) % 8)
    ac_data = bytes(int(bits[k:k + 8], 2) for k in range(0, len(bits), 8))
    ac_data = ac_data.replace(b"\xff", b"\xff\x00")
    ac_scan = b"\xff\xda" + struct.pack(">HB", 8, 1) + b"\x01\x00" + b"\x01\x3f\x00" + ac_data
    body = b"\xff\xd8" + _dqt_dht_gray() + sof + dc_scan + ac_scan * (scans - 1) + b"\xff\xd9"
    path.write_bytes(body)
    return path


def bmp(path, width, height, keep_bytes=None):
    """A 24-bit BMP header for width x height; its pixel rows cut to
    keep_bytes (None: all of them; 0: none, the 54-byte header alone)."""
    row = (width * 3 + 3) & ~3
    size = row * height
    head = b"BM" + struct.pack("<IHHI", 54 + size, 0, 0, 54)
    head += struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, size, 2835, 2835, 0, 0)
    pixels = bytes((x * 7) & 0xFF for x in range(size if keep_bytes is None else keep_bytes))
    path.write_bytes(head + pixels)
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


def flipped(path, source, count=50, start_fraction=0.5, seed=7):
    """`source` with `count` bytes flipped (xor 0xFF) from start_fraction of
    its length on, at a fixed pseudo-random spacing."""
    data = bytearray(pathlib.Path(source).read_bytes())
    at, step = int(len(data) * start_fraction), max(1, (len(data) // 3) // count)
    for k in range(count):
        p = at + (k * step + (seed * k * k) % step) % (len(data) - at)
        data[p] ^= 0xFF
    path.write_bytes(bytes(data))
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
