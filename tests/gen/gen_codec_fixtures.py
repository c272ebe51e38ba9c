#!/usr/bin/env python3
"""Writes tests/fixtures/codecs/: small PNG/WebP/GIF/BMP/TIFF/JPEG files and
Pillow's decodes of them as raw golden bytes, for tests/unit/test_codecs.c
and tests/unit/test_exif.c.

Run by hand from the repository root (needs Pillow and numpy); the outputs
are committed, so the tests never need Pillow:

    python3 tests/gen/gen_codec_fixtures.py

Everything is deterministic (fixed seeds, no timestamps). PNGs that Pillow
cannot write (interlaced, 16-bit colour, 1/2/4-bit gray, several filter
types, chunks with bad CRCs) come from the small PNG writer below; Pillow
then decodes every one of them, which also checks the writer.

MANIFEST.txt lists one decodable image per line: "file width height tol".
Next to each file, file.rgb and file.gray hold the expected 8-bit output
for channels 3 and 1 (tightly packed rows); tol is the largest difference
allowed per sample (0 = exact). For 8-bit and smaller PNGs and for WebP the
goldens are Pillow's Image.open(f).convert("RGB") / .convert("L"). For
16-bit PNGs they follow ferry's documented rule instead, round(v / 257) =
(v * 255 + 32895) >> 16, because Pillow keeps the high byte of 16-bit
colour and clips 16-bit gray ("I;16" -> "L" is min(v, 255)); the script
asserts that this is still what Pillow does, so a change shows up here.
"""
import io
import os
import struct
import sys
import warnings
import zlib

import numpy as np
from PIL import Image, ImageOps

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "codecs")

manifest = []


def rgb_pattern(w, h, seed):
    """An asymmetric test picture: gradients, a bright corner mark, noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1)).astype(np.int64)
    g = (y * 255 // max(h - 1, 1)).astype(np.int64)
    b = ((x * 7 + y * 13) % 256).astype(np.int64)
    img = np.stack([r, g, b], axis=-1) + rng.integers(-20, 21, (h, w, 3))
    img[: max(h // 4, 1), : max(w // 4, 1)] = [250, 30, 30]  # top-left mark
    return np.clip(img, 0, 255).astype(np.uint8)


def alpha_pattern(w, h):
    y, x = np.mgrid[0:h, 0:w]
    a = (x * 255 // max(w - 1, 1)).astype(np.uint8)
    a[y % 5 == 0] = 0  # fully transparent rows keep their colour (dropped alpha)
    return a


# ------------------------------------------------------------ PNG writer


def chunk(kind, data, bad_crc=False):
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    if bad_crc:
        crc ^= 0x5A5A5A5A
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def pack_row(samples, depth):
    """One row of samples (1-D ints) as PNG bytes."""
    if depth == 16:
        return samples.astype(">u2").tobytes()
    if depth == 8:
        return samples.astype(np.uint8).tobytes()
    per = 8 // depth
    out = bytearray((len(samples) + per - 1) // per)
    for i, v in enumerate(samples):
        out[i // per] |= int(v) << (8 - depth * (i % per + 1))
    return bytes(out)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def filter_row(kind, raw, prior, bpp):
    """PNG filter `kind` (0..4) of one row of bytes."""
    out = bytearray(len(raw))
    for i in range(len(raw)):
        a = raw[i - bpp] if i >= bpp else 0
        b = prior[i]
        c = prior[i - bpp] if i >= bpp else 0
        pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][kind]
        out[i] = (raw[i] - pred) & 0xFF
    return bytes([kind]) + bytes(out)


def image_data(arr, depth, spp):
    """Filtered scanlines of a (h, w, spp) array, cycling filter types 0..4
    so that the decoder meets every one."""
    h, w = arr.shape[:2]
    bpp = max(1, depth * spp // 8)
    prior = bytes(len(pack_row(arr[0].reshape(-1), depth))) if h and w else b""
    out = b""
    for y in range(h):
        raw = pack_row(arr[y].reshape(-1), depth)
        out += filter_row((y + w) % 5, raw, prior, bpp)
        prior = raw
    return out


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def write_png(name, arr, color, depth, interlace=False, palette=None, trns=None, before=(),
              after=(), idat_parts=1):
    """arr: (h, w, spp) samples (palette indices for colour type 3)."""
    arr = np.asarray(arr)
    h, w, spp = arr.shape
    if interlace:
        data = b"".join(image_data(arr[y0::dy, x0::dx], depth, spp)
                        for x0, y0, dx, dy in ADAM7 if x0 < w and y0 < h)
    else:
        data = image_data(arr, depth, spp)
    z = zlib.compress(data, 9)
    png = b"\x89PNG\r\n\x1a\n"
    png += chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, int(interlace)))
    for c in before:
        png += c
    if palette is not None:
        png += chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).reshape(-1)))
    if trns is not None:
        png += chunk(b"tRNS", trns)
    step = (len(z) + idat_parts - 1) // idat_parts
    for i in range(0, len(z), step):
        png += chunk(b"IDAT", z[i:i + step])
    for c in after:
        png += c
    png += chunk(b"IEND", b"")
    save_bytes(name, png)
    return png


# ------------------------------------------------------------ outputs


def save_bytes(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def l_from_rgb(rgb):
    """Pillow's RGB -> L: (19595 R + 38470 G + 7471 B + 0x8000) >> 16."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return ((19595 * r + 38470 * g + 7471 * b + 0x8000) >> 16).astype(np.uint8)


def golden_from_pillow(name, tol=0):
    """Records Pillow's own decode of fixture `name` as its golden."""
    with Image.open(os.path.join(OUT, name)) as im:
        rgb = np.asarray(im.convert("RGB"))
        im.seek(0)
        gray = np.asarray(im.convert("L"))
    add_golden(name, rgb, gray, tol)


def add_golden(name, rgb, gray, tol=0):
    h, w = gray.shape
    assert rgb.shape == (h, w, 3)
    save_bytes(name + ".rgb", rgb.astype(np.uint8).tobytes())
    save_bytes(name + ".gray", gray.astype(np.uint8).tobytes())
    manifest.append(f"{name} {w} {h} {tol}")


def scale16(v):
    return ((v.astype(np.int64) * 255 + 32895) >> 16).astype(np.uint8)


def golden_16bit(name, arr16, color):
    """ferry's rule for 16-bit PNGs, checked against what Pillow does."""
    s = scale16(arr16)
    rgb = np.repeat(s[..., :1], 3, axis=-1) if color in (0, 4) else s[..., :3]
    gray = s[..., 0] if color in (0, 4) else l_from_rgb(rgb)
    with Image.open(os.path.join(OUT, name)) as im:
        im.load()
        if color == 0:  # Pillow: "I;16", clipped to 255 by convert("L")
            assert im.mode == "I;16", im.mode
            clipped = np.minimum(arr16[..., 0], 255)
            assert (np.asarray(im.convert("L")) == clipped).all()
        else:  # Pillow: the high byte
            high = (arr16 >> 8).astype(np.uint8)
            want = np.repeat(high[..., :1], 3, -1) if color == 4 else high[..., :3]
            assert (np.asarray(im.convert("RGB")) == want).all()
    add_golden(name, rgb, gray, 0)


def pillow_bytes(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def exif_blob(orientation, big_endian=False):
    """A minimal TIFF-structured EXIF payload: IFD0 with Orientation."""
    e = ">" if big_endian else "<"
    head = b"MM\x00*" if big_endian else b"II*\x00"
    ifd = struct.pack(e + "H", 1) + struct.pack(e + "HHIHH", 0x0112, 3, 1, orientation, 0)
    return head + struct.pack(e + "I", 8) + ifd + struct.pack(e + "I", 0)


# ------------------------------------------------------------ fixtures


def gen_png():
    W, H = 37, 23
    rgb = rgb_pattern(W, H, 1)
    a = alpha_pattern(W, H)
    gray = l_from_rgb(rgb)

    # 8-bit, written by Pillow.
    save_bytes("gray8.png", pillow_bytes(Image.fromarray(gray, "L"), "PNG"))
    save_bytes("rgb8.png", pillow_bytes(Image.fromarray(rgb, "RGB"), "PNG"))
    save_bytes("rgba8.png", pillow_bytes(Image.fromarray(np.dstack([rgb, a]), "RGBA"), "PNG"))
    save_bytes("graya8.png", pillow_bytes(Image.fromarray(np.dstack([gray, a]), "LA"), "PNG"))
    pal = Image.fromarray(rgb, "RGB").quantize(colors=40, dither=Image.Dither.NONE)
    save_bytes("pal8_trns.png", pillow_bytes(pal, "PNG", transparency=bytes(range(0, 240, 6))))
    pal16 = Image.fromarray(rgb, "RGB").quantize(colors=16, dither=Image.Dither.NONE)
    save_bytes("pal4.png", pillow_bytes(pal16, "PNG", bits=4))
    save_bytes("gray1.png", pillow_bytes(Image.fromarray(gray > 128), "PNG"))
    for n in ["gray8.png", "rgb8.png", "rgba8.png", "graya8.png", "pal8_trns.png", "pal4.png",
              "gray1.png"]:
        golden_from_pillow(n)

    # Written here: every filter type, low bit depths, colour keys, Adam7.
    g3 = gray[..., None]
    write_png("gray2.png", g3 >> 6, 0, 2)
    write_png("gray4.png", g3 >> 4, 0, 4, trns=struct.pack(">H", 3))
    write_png("rgb8_trns.png", rgb, 2, 8, trns=struct.pack(">HHH", *rgb[0, 0]))
    write_png("rgb8_adam7.png", rgb, 2, 8, interlace=True, idat_parts=3)
    write_png("rgba8_adam7.png", np.dstack([rgb, a]), 6, 8, interlace=True)
    write_png("gray8_adam7.png", g3, 0, 8, interlace=True)
    write_png("gray1_adam7.png", (g3 > 100).astype(np.uint8), 0, 1, interlace=True)
    plte = rgb_pattern(16, 1, 5)[0]
    idx = (gray[..., None] >> 4).astype(np.uint8)
    write_png("pal4_adam7.png", idx, 3, 4, interlace=True, palette=plte,
              trns=bytes([0, 128, 255]))
    for w, h in [(1, 1), (3, 2), (9, 9)]:  # passes that are empty or one pixel wide
        write_png(f"rgb8_adam7_{w}x{h}.png", rgb_pattern(w, h, w * 10 + h), 2, 8, interlace=True)
    for n in ["gray2.png", "gray4.png", "rgb8_trns.png", "rgb8_adam7.png", "rgba8_adam7.png",
              "gray8_adam7.png", "gray1_adam7.png", "pal4_adam7.png", "rgb8_adam7_1x1.png",
              "rgb8_adam7_3x2.png", "rgb8_adam7_9x9.png"]:
        golden_from_pillow(n)

    # 16-bit: noise over the whole range, so rounding differences show.
    rng = np.random.default_rng(16)
    v16 = rng.integers(0, 65536, (H, W, 4)).astype(np.uint16)
    v16[0, :4, :] = [[0, 0, 0, 0], [127, 128, 255, 256], [32767, 32768, 65279, 65280],
                     [65534, 65535, 65535, 65535]]
    for name, color, spp, interlace in [("gray16.png", 0, 1, False), ("graya16.png", 4, 2, False),
                                        ("rgb16.png", 2, 3, False), ("rgba16.png", 6, 4, False),
                                        ("rgb16_adam7.png", 2, 3, True)]:
        write_png(name, v16[..., :spp], color, 16, interlace=interlace)
        golden_16bit(name, v16[..., :spp], color)
    # Every 16-bit value once (pixel i = i); its expected output is computed
    # by the test from the formula, so no golden is stored.
    ramp = np.arange(65536, dtype=np.uint16).reshape(256, 256, 1)
    write_png("gray16_ramp.png", ramp, 0, 16)

    # Ancillary chunks before and after IDAT (the decoder skips them; the
    # tests corrupt their CRCs in memory), and orientation in eXIf.
    text = chunk(b"tEXt", b"Comment\x00before the image data")
    text2 = chunk(b"tEXt", b"Comment\x00after the image data")
    write_png("text_chunks.png", rgb, 2, 8, before=[text], after=[text2])
    golden_from_pillow("text_chunks.png")
    write_png("orient6.png", rgb, 2, 8, before=[chunk(b"eXIf", exif_blob(6, True))])
    golden_from_pillow("orient6.png")
    with Image.open(os.path.join(OUT, "orient6.png")) as im:
        assert im.getexif().get(0x0112) == 6
    write_png("orient8_late.png", rgb, 2, 8, after=[chunk(b"eXIf", exif_blob(8))])

    # Every (R, G, B) whose luma sum is exactly halfway (low 16 bits 0x8000):
    # the colours where the rounding of RGB -> L shows.
    r, g, b = np.meshgrid(np.arange(256), np.arange(256), np.arange(256), indexing="ij")
    ties = (19595 * r + 38470 * g + 7471 * b) & 0xFFFF == 0x8000
    tie_rgb = np.stack([r[ties], g[ties], b[ties]], axis=-1).astype(np.uint8)
    n = len(tie_rgb) - len(tie_rgb) % 16
    ties_im = Image.fromarray(tie_rgb[:n].reshape(-1, 16, 3))
    save_bytes("luma_ties.png", pillow_bytes(ties_im, "PNG"))
    save_bytes("luma_ties.webp", pillow_bytes(ties_im, "WEBP", lossless=True, exact=True))
    golden_from_pillow("luma_ties.png")
    golden_from_pillow("luma_ties.webp")

    # A header that claims 65500 x 65500 (12.8 GB as RGB) over a tiny IDAT.
    bomb = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 65500, 65500, 8, 2,
                                                            0, 0, 0))
    bomb += chunk(b"IDAT", zlib.compress(b"\x00" * 1000)) + chunk(b"IEND", b"")
    save_bytes("bomb_65500x65500.png", bomb)
    # A 1x1 RGB pixel (16, 32, 48) whose zlib stream goes on with 64 MiB of
    # compressed zeros (an inflate bomb: only the row is to be inflated),
    # and the same pixel followed by bytes that are no deflate data at all
    # (read in the same inflate call as the row: Pillow fails, so must we).
    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    z = zlib.compressobj(9)
    stream = z.compress(b"\x00\x10\x20\x30")
    for _ in range(64):
        stream += z.compress(b"\x00" * (1 << 20))
    stream += z.flush()
    save_bytes("inflate_bomb_1x1.png", b"\x89PNG\r\n\x1a\n" + ihdr + chunk(b"IDAT", stream) +
               chunk(b"IEND", b""))
    z = zlib.compressobj(9)
    stream = z.compress(b"\x00\x10\x20\x30") + z.flush(zlib.Z_SYNC_FLUSH)
    stream += bytes(range(7, 250, 3)) * 4
    # 1 x (2^20 + 1): within the pixel limit, one row over the side limit
    h = (1 << 20) + 1
    save_bytes("tall_1x1048577.png", b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(
        ">IIBBBBB", 1, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(b"\x00\x10\x20\x30" * h, 9)) +
        chunk(b"IEND", b""))
    save_bytes("excess_idat_1x1.png", b"\x89PNG\r\n\x1a\n" + ihdr + chunk(b"IDAT", stream) +
               chunk(b"IEND", b""))


def gen_webp():
    W, H = 37, 23
    rgb = rgb_pattern(W, H, 2)
    rgba = np.dstack([rgb, alpha_pattern(W, H)])
    im, ima = Image.fromarray(rgb, "RGB"), Image.fromarray(rgba, "RGBA")
    save_bytes("lossy.webp", pillow_bytes(im, "WEBP", quality=80, method=4))
    save_bytes("lossy_alpha.webp", pillow_bytes(ima, "WEBP", quality=80, method=4))
    save_bytes("lossless.webp", pillow_bytes(im, "WEBP", lossless=True))
    save_bytes("lossless_alpha.webp", pillow_bytes(ima, "WEBP", lossless=True, exact=True))
    exif = Image.Exif()
    exif[0x0112] = 3
    save_bytes("orient3.webp", pillow_bytes(im, "WEBP", quality=80, exif=exif.tobytes()))
    for n in ["lossy.webp", "lossy_alpha.webp", "lossless.webp", "lossless_alpha.webp",
              "orient3.webp"]:
        golden_from_pillow(n)
    # Two frames: ferry decodes still images only.
    frames = [Image.fromarray(rgb_pattern(8, 8, 20 + i), "RGB") for i in range(2)]
    save_bytes("anim.webp", pillow_bytes(frames[0], "WEBP", save_all=True,
                                         append_images=frames[1:], lossless=True))
    with Image.open(os.path.join(OUT, "orient3.webp")) as im3:
        assert im3.getexif().get(0x0112) == 3


def gen_tiff():
    """TIFF through libtiff: compressions, grey, palette, a stored
    orientation (Pillow does not apply it, nor does the codec: fy_decode
    does) and two pages (the first is the image)."""
    W, H = 37, 23
    rgb = rgb_pattern(W, H, 5)
    im = Image.fromarray(rgb, "RGB")
    save_bytes("rgb_lzw.tiff", pillow_bytes(im, "TIFF", compression="tiff_lzw"))
    save_bytes("rgb_deflate.tiff", pillow_bytes(im, "TIFF", compression="tiff_adobe_deflate"))
    save_bytes("gray8.tiff", pillow_bytes(im.convert("L"), "TIFF"))
    save_bytes("palette.tiff", pillow_bytes(im.quantize(16), "TIFF"))
    save_bytes("orient3.tiff", pillow_bytes(im, "TIFF", tiffinfo={274: 3}))
    second = Image.fromarray(rgb_pattern(W, H, 6), "RGB")
    save_bytes("two_pages.tiff", pillow_bytes(im, "TIFF", save_all=True, append_images=[second]))
    for n in ["rgb_lzw.tiff", "rgb_deflate.tiff", "gray8.tiff", "palette.tiff", "orient3.tiff",
              "two_pages.tiff"]:
        golden_from_pillow(n)
    with Image.open(os.path.join(OUT, "orient3.tiff")) as im3:
        assert im3.getexif().get(0x0112) == 3


def gen_gif():
    """GIF through giflib: a palette picture (interlaced and not), a grey
    one, one with a transparent index, and two frames (the first is the
    image)."""
    W, H = 37, 23
    im = Image.fromarray(rgb_pattern(W, H, 7), "RGB").quantize(64)
    save_bytes("palette.gif", pillow_bytes(im, "GIF", interlace=False))
    save_bytes("interlaced.gif", pillow_bytes(im, "GIF", interlace=True))
    save_bytes("gray.gif", pillow_bytes(Image.fromarray(rgb_pattern(W, H, 8), "RGB")
                                        .convert("L"), "GIF"))
    save_bytes("transparent.gif", pillow_bytes(im, "GIF", transparency=3))
    second = Image.fromarray(rgb_pattern(W, H, 9), "RGB").quantize(64)
    save_bytes("two_frames.gif", pillow_bytes(im, "GIF", save_all=True, append_images=[second],
                                              duration=100, loop=0))
    for n in ["palette.gif", "interlaced.gif", "gray.gif", "transparent.gif", "two_frames.gif"]:
        golden_from_pillow(n)


def gen_heif():
    """HEIF through libheif: HEIC (HEVC) in colour, grey and with alpha, at
    an odd size (the codec pads to even sizes and the file crops back), and
    AVIF. Written and decoded by pillow-heif (its own libheif): the goldens
    carry a tolerance, since ferry's libheif may convert YCbCr to RGB with
    other rounding."""
    try:
        import pillow_heif
    except ImportError:
        sys.exit("gen_codec_fixtures: the HEIF fixtures need pillow-heif (pip install pillow-heif)")
    pillow_heif.register_heif_opener()
    pillow_heif.register_avif_opener() if hasattr(pillow_heif, "register_avif_opener") else None
    W, H = 37, 23
    rgb = Image.fromarray(rgb_pattern(W, H, 11), "RGB")
    save_bytes("rgb.heic", pillow_bytes(rgb, "HEIF", quality=90))
    save_bytes("gray.heic", pillow_bytes(Image.fromarray(rgb_pattern(W, H, 12), "RGB")
                                         .convert("L"), "HEIF", quality=90))
    rgba = Image.fromarray(rgb_pattern(W, H, 13), "RGB").convert("RGBA")
    rgba.putalpha(Image.linear_gradient("L").resize((W, H)))
    save_bytes("alpha.heic", pillow_bytes(rgba, "HEIF", quality=90))
    for n in ["rgb.heic", "gray.heic", "alpha.heic"]:
        golden_from_pillow(n, tol=4)
    # AV1 decoders (libaom, dav1d) upsample chroma differently where colours
    # change from pixel to pixel: a smooth picture, where they agree
    smooth = Image.merge("RGB", [Image.linear_gradient("L").resize((W, H)),
                                 Image.linear_gradient("L").rotate(90).resize((W, H)),
                                 Image.new("L", (W, H), 90)])
    try:
        save_bytes("rgb.avif", pillow_bytes(smooth, "AVIF", quality=90))
        golden_from_pillow("rgb.avif", tol=8)
    except (KeyError, OSError) as e:
        print(f"gen_codec_fixtures: no AVIF fixture ({e})")


def gen_bmp():
    """BMP through stb_image: 24-bit at an odd width (rows padded to 4
    bytes), palettes of 200 and 16 colours, 1-bit, grey (a palette of
    greys), and 32-bit with alpha; Pillow's decodes are the goldens."""
    W, H = 37, 23
    rgb = Image.fromarray(rgb_pattern(W, H, 21), "RGB")
    save_bytes("rgb24.bmp", pillow_bytes(rgb, "BMP"))
    save_bytes("palette8.bmp", pillow_bytes(rgb.quantize(200), "BMP"))
    save_bytes("palette16.bmp", pillow_bytes(rgb.quantize(16), "BMP"))
    save_bytes("mono1.bmp", pillow_bytes(rgb.convert("1"), "BMP"))
    save_bytes("gray8.bmp", pillow_bytes(rgb.convert("L"), "BMP"))
    rgba = rgb.convert("RGBA")
    rgba.putalpha(Image.linear_gradient("L").resize((W, H)))
    save_bytes("rgba32.bmp", pillow_bytes(rgba, "BMP"))
    for n in ["rgb24.bmp", "palette8.bmp", "palette16.bmp", "mono1.bmp", "gray8.bmp",
              "rgba32.bmp"]:
        golden_from_pillow(n)


def gen_raw():
    """A DNG without a preview (as some phones and converters write them):
    a 64x48 RGGB mosaic, 12 bits, a gradient and a bright rectangle, which
    ferry develops at half size with LibRaw. Written with pidng."""
    try:
        from pidng.core import RAW2DNG, DNGTags, Tag
        from pidng.defs import (CFAPattern, PhotometricInterpretation, DNGVersion,
                                CalibrationIlluminant)
    except ImportError:
        sys.exit("gen_codec_fixtures: the DNG fixture needs pidng (pip install pidng)")
    W, H = 64, 48
    yy, xx = np.mgrid[0:H, 0:W]
    img = (xx * 40 + yy * 20).astype(np.uint16)
    img[10:30, 20:44] += 1500
    t = DNGTags()
    for tag, v in [(Tag.ImageWidth, W), (Tag.ImageLength, H), (Tag.TileWidth, W),
                   (Tag.TileLength, H), (Tag.Orientation, 1),
                   (Tag.PhotometricInterpretation, PhotometricInterpretation.Color_Filter_Array),
                   (Tag.SamplesPerPixel, 1), (Tag.BitsPerSample, 16),
                   (Tag.CFARepeatPatternDim, [2, 2]), (Tag.CFAPattern, CFAPattern.RGGB),
                   (Tag.BlackLevel, 0), (Tag.WhiteLevel, 4095),
                   (Tag.ColorMatrix1, [[1, 1], [0, 1], [0, 1], [0, 1], [1, 1], [0, 1], [0, 1],
                                       [0, 1], [1, 1]]),
                   (Tag.CalibrationIlluminant1, CalibrationIlluminant.D65),
                   (Tag.AsShotNeutral, [[1, 1], [1, 1], [1, 1]]), (Tag.Make, "ferry"),
                   (Tag.Model, "test"), (Tag.DNGVersion, DNGVersion.V1_4),
                   (Tag.DNGBackwardVersion, DNGVersion.V1_2)]:
        t.set(tag, v)
    r = RAW2DNG()
    r.options(t, path=OUT, compress=False)
    r.convert(np.clip(img, 0, 4095).astype(np.uint16), filename="sensor")


def gen_other():
    """Formats that are only sniffed, and files whose names lie."""
    im = Image.fromarray(rgb_pattern(8, 8, 3), "RGB")
    save_bytes("tiny.gif", pillow_bytes(im, "GIF"))
    save_bytes("tiny.bmp", pillow_bytes(im, "BMP"))
    # a BMP whose header says run-length compression (BI_RLE8), which
    # ferry refuses with the reason (its data is not RLE: only the refusal
    # before decoding is tested)
    rle = bytearray(pillow_bytes(im.quantize(16), "BMP"))
    rle[30:34] = (1).to_bytes(4, "little")
    save_bytes("rle8.bmp", bytes(rle))
    save_bytes("tiny.tiff", pillow_bytes(im, "TIFF"))
    save_bytes("jpeg_named.png", pillow_bytes(im, "JPEG", quality=90))
    save_bytes("png_named.jpg", pillow_bytes(im, "PNG"))
    save_bytes("webp_named.png", pillow_bytes(im, "WEBP", lossless=True))


def gen_orient():
    """An asymmetric 7x5 RGB image and Pillow's exif_transpose of it for
    orientations 1..8 (each saved with that EXIF orientation and reopened,
    so the whole Pillow path is exercised), concatenated."""
    src = rgb_pattern(7, 5, 4)
    save_bytes("orient_src_7x5.rgb", src.tobytes())
    out = b""
    for o in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = o
        with Image.open(io.BytesIO(pillow_bytes(Image.fromarray(src), "PNG",
                                                exif=exif.tobytes()))) as im:
            up = ImageOps.exif_transpose(im)
            want = (5, 7) if o >= 5 else (7, 5)
            assert up.size == want, (o, up.size)
            out += up.convert("RGB").tobytes()
    save_bytes("orient_pillow_7x5.rgb", out)


def main():
    # Pillow suggests RGBA for palette images with tRNS; RGB is what we want.
    warnings.filterwarnings("ignore", "Palette images with Transparency")
    os.makedirs(OUT, exist_ok=True)
    gen_png()
    gen_webp()
    gen_tiff()
    gen_gif()
    gen_heif()
    gen_bmp()
    gen_raw()
    gen_other()
    gen_orient()
    with open(os.path.join(OUT, "MANIFEST.txt"), "w") as f:
        f.write("# file width height tol (goldens: file.rgb, file.gray); "
                "written by tests/gen/gen_codec_fixtures.py\n")
        f.write("\n".join(manifest) + "\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"{len(os.listdir(OUT))} files, {total} bytes in {OUT}")
    if total > 400 * 1024:
        sys.exit("fixtures are over 400 KB")


if __name__ == "__main__":
    main()
