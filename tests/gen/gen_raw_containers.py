"""Writes camera raws of the container kinds LibRaw reads TIFFs from, each
around a DNG of tests/fixtures/codecs: a Fujifilm RAF (the TIFF at the raw
data's offset, header byte 100, big-endian; no preview: offset 0 at byte
84) and a Canon CR3 (ftyp "crx ", moov / uuid with Canon's UUID / a CMT1
box holding the TIFF). raw_check.c checks the TIFFs LibRaw would read in
them. The layouts follow LibRaw's identify() and parseCR3 (facts, not
code). Usage: gen_raw_containers.py DNG OUT_STEM  -> OUT_STEM.raf, .cr3"""
import struct
import sys

CANON_UUID = bytes.fromhex("85c0b687820f11e08111f4ce462b6a48")


def raf(tiff: bytes) -> bytes:
    head = bytearray(256)
    head[0:28] = b"FUJIFILMCCD-RAW 0201FF383501"
    head[28:36] = b"X-TEST\0\0"
    struct.pack_into(">I", head, 100, len(head))  # the raw data's TIFF
    struct.pack_into(">I", head, 104, len(tiff))
    return bytes(head) + tiff


def box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def cr3(tiff: bytes) -> bytes:
    ftyp = box(b"ftyp", b"crx " + struct.pack(">I", 1) + b"crx isom")
    return ftyp + box(b"moov", box(b"uuid", CANON_UUID + box(b"CMT1", tiff)))


def main() -> None:
    dng, stem = sys.argv[1], sys.argv[2]
    tiff = open(dng, "rb").read()
    open(stem + ".raf", "wb").write(raf(tiff))
    open(stem + ".cr3", "wb").write(cr3(tiff))


if __name__ == "__main__":
    main()
