"""Crafted image files for the decoders' hostile-input tests (issue 52:
tests/python/test_codec_limits.py, tests/unit/test_codecs_hostile.c) and the
fuzz seeds (fuzz/seed.sh): BMP headers declaring more than the file
holds, progressive JPEGs of many scans (valid: libjpeg and Pillow decode them),
TIFFs to cut or whose strip tags to change, HEIC files with bits flipped in
their coded data. Nothing here imports ferry. Usage: gen_hostile.py OUT_DIR
(writes the small ones there, as fuzz seeds)."""
import os
import struct
import sys


def bmp_header(w, h, bpp=24, offset=54, size=54):
    return (b"BM" + struct.pack("<IHHI", size, 0, 0, offset) +
            struct.pack("<IiiHHIIiiII", 40, w, h, 1, bpp, 0, 0, 2835, 2835, 0, 0))


class Bits:
    """Entropy-coded bytes: bits MSB first, 0xFF stuffed, padded with ones."""

    def __init__(self):
        self.out, self.acc, self.n = bytearray(), 0, 0

    def put(self, value, length):
        for i in range(length - 1, -1, -1):
            self.acc = self.acc << 1 | (value >> i & 1)
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                if self.acc == 0xFF:
                    self.out.append(0)
                self.acc, self.n = 0, 0

    def bytes(self):
        while self.n:
            self.put(1, 1)
        return bytes(self.out)


def segment(marker, payload):
    return b"\xff" + bytes([marker]) + struct.pack(">H", len(payload) + 2) + payload


def flat_progressive_jpeg(side, ac_scans):
    """A valid progressive grey JPEG of side x side mid-grey pixels: a DC
    scan, then the first AC scan (Ss 1, Se 63, Ah = Al = 0: every block an
    end-of-band run, legal to repeat) `ac_scans` times. Each scan makes
    libjpeg go over every block; the bytes cost nothing to make."""
    blocks = ((side + 7) // 8) ** 2
    dqt = segment(0xDB, b"\x00" + b"\x01" * 64)
    sof = segment(0xC2, struct.pack(">BHHB", 8, side, side, 1) + b"\x01\x11\x00")
    # DC table 0: category 0 as the 1-bit code 0; AC table 0: EOB0..EOB14
    # (symbols 0x00..0xE0) as 4-bit codes 0..14
    dht_dc = segment(0xC4, b"\x00" + bytes([1] + [0] * 15) + b"\x00")
    dht_ac = segment(0xC4, b"\x10" + bytes([0, 0, 0, 15] + [0] * 12) +
                     bytes(r << 4 for r in range(15)))
    # every block's DC difference the 1-bit code 0, the last byte padded with ones
    dc = bytes(blocks // 8) + (bytes([0xFF >> blocks % 8]) if blocks % 8 else b"")
    ac, left = Bits(), blocks
    while left:
        run = min(left, 32767)
        r = run.bit_length() - 1  # EOBr: 2^r + r extra bits
        ac.put(r, 4)
        ac.put(run - (1 << r), r)
        left -= run
    sos_dc = segment(0xDA, b"\x01\x01\x00\x00\x00\x00") + dc
    sos_ac = segment(0xDA, b"\x01\x01\x00\x01\x3f\x00") + ac.bytes()
    return (b"\xff\xd8" + dqt + sof + dht_dc + dht_ac + sos_dc + sos_ac * ac_scans +
            b"\xff\xd9")


def plain_tiff():
    """An uncompressed 30 x 40 RGB TIFF, one strip, its directory first (as
    Pillow writes it): (bytes, offset of each tag's entry by tag)."""
    import io
    from PIL import Image
    rows = bytes((x * 7 + y * 13) % 256 for y in range(40) for x in range(90))
    b = io.BytesIO()
    Image.frombytes("RGB", (30, 40), rows).save(b, "TIFF")
    d = bytearray(b.getvalue())
    ifd = struct.unpack("<I", d[4:8])[0]
    entries = {struct.unpack("<H", d[ifd + 2 + 12 * i:ifd + 4 + 12 * i])[0]: ifd + 2 + 12 * i
               for i in range(struct.unpack("<H", d[ifd:ifd + 2])[0])}
    return d, entries


def garbled(data, seed, flips):
    """`data` with `flips` bits flipped in its mdat box's payload past the
    first 16 bytes (the first NAL unit's length and slice header), at
    places drawn by a fixed linear congruential sequence from `seed`."""
    i = 0
    while data[i + 4:i + 8] != b"mdat":
        i += struct.unpack(">I", data[i:i + 4])[0]
    a, z = i + 8 + 16, i + struct.unpack(">I", data[i:i + 4])[0]
    d, x = bytearray(data), seed * 2654435761 + 1
    for _ in range(flips):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2 ** 64
        d[a + (x >> 33) % (z - a)] ^= 1 << (x >> 29) % 8
    return bytes(d)


def seeds(fixtures):
    """{name: bytes}: the small crafted files, for a fuzzer's corpus."""
    out = {"bmp-13000-header.bmp": bmp_header(13000, 13000),
           "bmp-inside-header.bmp": bmp_header(2, 2, 8, 40, 62) + bytes(8),
           "jpeg-1001-scans.jpg": flat_progressive_jpeg(64, 1000),
           "jpeg-41-scans-of-4000.jpg": flat_progressive_jpeg(4000, 40)}
    rgb = open(os.path.join(fixtures, "rgb24.bmp"), "rb").read()
    out["bmp-cut.bmp"] = rgb[:len(rgb) * 2 // 3]
    heic = open(os.path.join(fixtures, "rgb.heic"), "rb").read()
    out["heic-50-flips.heic"] = garbled(heic, 0, 50)
    out["heic-1-flip.heic"] = garbled(heic, 3, 1)
    try:
        d, at = plain_tiff()
    except ImportError:
        print("gen_hostile: no Pillow: the TIFF seeds are left out")
        return out
    out["tiff-cut.tiff"] = bytes(d[:len(d) * 9 // 10])
    d[at[278] + 8:at[278] + 12] = struct.pack("<I", 7)
    out["tiff-rows-per-strip-7.tiff"] = bytes(d)
    return out


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, data in seeds(os.path.join(here, "..", "fixtures", "codecs")).items():
        with open(os.path.join(sys.argv[1], name), "wb") as f:
            f.write(data)
