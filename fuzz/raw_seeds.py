"""Writes fuzz seeds that reach LibRaw's maker-note parsers: small
TIFF-shaped raws of the makes ferry sniffs as camera raw (Nikon, Sony,
Pentax, Canon CR2, Olympus ORF, Panasonic RW2, DNG), each with an EXIF IFD
whose MakerNote is laid out as that maker's (the layouts as exiftool and
LibRaw document them), a SubIFD with a tiny 16-bit CFA, and the same TIFF
inside a Fujifilm RAF and a Canon CR3 (tests/gen/gen_raw_containers.py).
raw_check.c walks IFDs but not maker notes, so these are where a fuzzer
may find what it does not cover. Usage: raw_seeds.py CORPUS (writes
CORPUS/probe/raw-* and CORPUS/decode/raw-*-00, -97)."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gen"))
from gen_raw_containers import cr3, raf  # noqa: E402

ASCII, SHORT, LONG, UNDEF = 2, 3, 4, 7


class Tiff:
    """A TIFF laid out in one pass: IFDs and their out-of-line data."""

    def __init__(self, big: bool, magic: bytes = b""):
        self.e = ">" if big else "<"
        self.magic = magic or (b"MM\0*" if big else b"II*\0")
        self.buf = bytearray(self.magic + struct.pack(self.e + "I", 0))

    def blob(self, data: bytes) -> int:
        if len(self.buf) % 2:
            self.buf += b"\0"
        at = len(self.buf)
        self.buf += data
        return at

    def ifd(self, entries, first: bool = False) -> int:
        """entries: (tag, type, count, value: int or bytes); sorted by tag."""
        body = bytearray(struct.pack(self.e + "H", len(entries)))
        later = []
        for tag, typ, count, value in sorted(entries, key=lambda x: x[0]):
            if isinstance(value, bytes):
                if len(value) <= 4:
                    field = value.ljust(4, b"\0")
                else:
                    later.append((len(body) + 8, value))
                    field = b"\0\0\0\0"
            elif typ == SHORT and count == 1:
                field = struct.pack(self.e + "HH", value, 0)
            else:
                field = struct.pack(self.e + "I", value)
            body += struct.pack(self.e + "HHI", tag, typ, count) + field
        body += b"\0\0\0\0"
        at = self.blob(bytes(body))
        for where, value in later:
            struct.pack_into(self.e + "I", self.buf, at + where, self.blob(value))
        if first:
            struct.pack_into(self.e + "I", self.buf, 4, at)
        return at


def makernote(make: str, e: str) -> bytes:
    """A maker note of a few entries in `make`'s layout."""
    entries = [(0x0001, UNDEF, 4, b"0210"), (0x0002, SHORT, 2, struct.pack(e + "HH", 0, 200)),
               (0x000c, LONG, 2, struct.pack(e + "II", 1, 1)), (0x0097, UNDEF, 8, b"0204" * 2),
               (0x00a7, LONG, 1, 42), (0x4001, UNDEF, 8, b"\0" * 8)]

    def plain_ifd(base_off: int, endian: str) -> bytes:
        # an IFD whose out-of-line values follow it; offsets from base_off
        n = len(entries)
        head = struct.pack(endian + "H", n)
        data = bytearray()
        rows = bytearray()
        for tag, typ, count, value in entries:
            if isinstance(value, bytes) and len(value) > 4:
                off = base_off + 2 + 12 * n + 4 + len(data)
                data += value
                field = struct.pack(endian + "I", off)
            elif isinstance(value, bytes):
                field = value.ljust(4, b"\0")
            else:
                field = struct.pack(endian + "I", value)
            rows += struct.pack(endian + "HHI", tag, typ, count) + field
        return head + bytes(rows) + b"\0\0\0\0" + bytes(data)

    if make == "NIKON":  # "Nikon\0", version, then a TIFF of its own
        return b"Nikon\0\x02\x10\0\0" + b"MM\0*\0\0\0\x08" + plain_ifd(8, ">")
    if make == "PENTAX":  # "AOC\0", byte order, an IFD (offsets from the note)
        return b"AOC\0MM" + plain_ifd(6, ">")
    if make == "OLYMPUS":  # "OLYMPUS\0", byte order, version, an IFD
        return b"OLYMPUS\0II\x03\0" + plain_ifd(12, "<")
    if make == "Panasonic":
        return b"Panasonic\0\0\0" + plain_ifd(12, e)
    return plain_ifd(0, e)  # Canon, Sony: a bare IFD


def raw(make: str, big: bool, magic: bytes = b"", dng: bool = False, cr2: bool = False) -> bytes:
    t = Tiff(big, magic)
    if cr2:  # "CR" and a version at byte 8, IFD0 after it
        t.buf += b"CR\x02\0\0\0\0\0"
    cfa = t.blob(bytes(range(256)) * 1)  # 8x8 16-bit samples
    note = makernote(make, t.e)
    exif = t.ifd([(0x829a, 5, 1, struct.pack(t.e + "II", 1, 100)), (0x927c, UNDEF, len(note), note)])
    sub = t.ifd([(254, LONG, 1, 0), (256, LONG, 1, 8), (257, LONG, 1, 8), (258, SHORT, 1, 16),
                 (259, SHORT, 1, 1), (262, SHORT, 1, 32803), (273, LONG, 1, cfa),
                 (277, SHORT, 1, 1), (278, LONG, 1, 8), (279, LONG, 1, 128),
                 (33421, SHORT, 2, struct.pack(t.e + "HH", 2, 2)),
                 (33422, 1, 4, bytes([0, 1, 1, 2]))])
    ifd0 = [(254, LONG, 1, 1), (256, LONG, 1, 4), (257, LONG, 1, 4), (271, ASCII, 0, b""),
            (272, ASCII, 6, b"Model\0"), (330, LONG, 1, sub), (34665, LONG, 1, exif)]
    name = (make + "\0").encode()
    ifd0[3] = (271, ASCII, len(name), name)
    if dng:
        ifd0.append((50706, 1, 4, bytes([1, 4, 0, 0])))
    t.ifd(ifd0, first=True)
    return bytes(t.buf)


def main() -> None:
    corpus = sys.argv[1]
    seeds = {
        "nef": raw("NIKON", True), "arw": raw("SONY", False), "pef": raw("PENTAX", True),
        "cr2": raw("Canon", False, cr2=True), "orf": raw("OLYMPUS", False, magic=b"IIRO"),
        "rw2": raw("Panasonic", False, magic=b"IIU\0"), "dng": raw("NIKON", False, dng=True),
    }
    seeds["raf"] = raf(seeds["dng"])
    seeds["cr3"] = cr3(seeds["cr2"])
    for d in ("probe", "decode"):
        os.makedirs(os.path.join(corpus, d), exist_ok=True)
    for kind, data in seeds.items():
        with open(os.path.join(corpus, "probe", "raw-" + kind), "wb") as f:
            f.write(data)
        for mode in (0x00, 0x97):  # decode: a mode byte first (seed.sh)
            with open(os.path.join(corpus, "decode", f"raw-{kind}-{mode:02x}"), "wb") as f:
                f.write(bytes([mode]) + data)
    print(f"raw_seeds: {len(seeds)} raws with maker notes in {corpus}/probe and decode")


if __name__ == "__main__":
    main()
