#!/usr/bin/env python3
"""A hard near-duplicate set for ferry's duplicate finder, from real photos.

    python3 tests/gen/gen_hardset.py SRC_DIR... OUT_DIR [--groups 40] [--seed 7]

Picks GROUPS photos of the SRC_DIRs (JPEGs; the test takes the corpus'
photos/ and hires/), each the original of a group, and writes it and its
edited copies into OUT_DIR, with OUT_DIR/GROUND_TRUTH.csv
(file,group,edit). Every file of a group shows the same picture; files of
different groups are different pictures (never one inside another: see
SAME_PICTURE_NCC). The originals are chosen so that the set holds hard
negatives: every other one is the source most like one already chosen
(another crop of the same scene, overlapping it: a pan or a burst; or a
scene of the same kind), the rest at random. The seed picks the sources'
order and every random edit: a new seed is a freshly generated set.

The edits (Pillow; each copy made from the original's pixels):

  orig          the original file, byte for byte
  crop10        10 % of the width cut from the left and 10 % of the height
                from the top
  crop10c       a centred crop keeping 90 % of each side
  cropr, cropr2 two crops cutting 10-25 % of each side at random places (any
                side, corner or in between, asymmetric; seeded: the same set
                every run for one seed)
  wmark         a watermark: a semi-transparent text line and logo at a
                random place
  rot3          turned 3 degrees (corners filled black, size kept)
  q15           re-saved as JPEG at quality 15
  half          half the width and height (a quarter of the pixels)
  gray          greyscale
  gamma06       gamma 0.6 (brighter)
  gamma16       gamma 1.6 (darker)
  letterbox     padded with black bars to 16:9 (or 9:16 for portrait)
  rot90, rot180, rot270   turned by a right angle (pixels)
  mirror        mirrored left to right
  exif6         pixels stored turned a quarter clockwise with EXIF
                orientation 6, so that a viewer shows the original
  png           the original's pixels as PNG

Ground truth: two files are duplicates when they are in the same group.
Pairs of different groups are non-duplicates, however alike they look.
"""
import argparse
import csv
import glob
import os
import random
import shutil
import sys

try:
    import numpy
except ImportError:
    sys.exit("gen_hardset: needs NumPy")

try:
    from PIL import Image, ImageOps
except ImportError:
    sys.exit("gen_hardset: needs Pillow (pip install pillow)")

EDITS = ["orig", "crop10", "crop10c", "cropr", "cropr2", "wmark", "rot3", "q15", "half", "gray", "gamma06", "gamma16",
         "letterbox", "rot90", "rot180", "rot270", "mirror", "exif6", "png"]


def _gamma(im, g):
    lut = [min(255, round(255 * (i / 255) ** g)) for i in range(256)]
    return im.point(lut * len(im.getbands()))


def _letterbox(im):
    w, h = im.size
    if w >= h:
        W, H = max(w, round(h * 16 / 9)), max(h, round(w * 9 / 16))
    else:
        W, H = max(w, round(h * 9 / 16)), max(h, round(w * 16 / 9))
    out = Image.new("RGB", (W, H), (0, 0, 0))
    out.paste(im, ((W - w) // 2, (H - h) // 2))
    return out


def _random_crop(im, rng, reject=None):
    """10-25 % of each side cut, split between its two ends at random: all
    from one end a third of the time, all from the other a third, anywhere
    between the rest (so sides, corners and asymmetric crops all occur)."""
    w, h = im.size
    for _ in range(50):  # drawn again while inside another group's picture
        kw, kh = rng.uniform(0.75, 0.90), rng.uniform(0.75, 0.90)
        cw, ch = round(w * kw), round(h * kh)
        fx, fy = (rng.choice((0.0, 1.0, rng.random())) for _ in range(2))
        x0, y0 = round((w - cw) * fx), round((h - ch) * fy)
        out = im.crop((x0, y0, x0 + cw, y0 + ch))
        if reject is None or not reject(out):
            break
    return out


def _watermark(im, rng):
    """A semi-transparent text line and a logo (a ring and a bar) over the
    picture at a random place, as stock-photo sites and apps mark them."""
    from PIL import ImageDraw, ImageFont
    w, h = im.size
    layer = Image.new("RGBA", im.size, (0, 0, 0, 0))
    d = ImageDraw.Draw(layer)
    size = max(10, h // 12)
    try:
        font = ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: a fixed small font
        font = ImageFont.load_default()
    tx, ty = round(rng.uniform(0.02, 0.4) * w), round(rng.uniform(0.05, 0.85) * h)
    d.text((tx, ty), "(c) ferry stock 2026", font=font, fill=(255, 255, 255, 150))
    r = max(6, min(w, h) // 10)
    lx, ly = round(rng.uniform(0.05, 0.8) * w), round(rng.uniform(0.05, 0.8) * h)
    d.ellipse((lx, ly, lx + 2 * r, ly + 2 * r), outline=(255, 255, 255, 140), width=max(2, r // 4))
    d.rectangle((lx + 2 * r + r // 2, ly + r // 2, lx + 5 * r, ly + r), fill=(255, 255, 255, 120))
    return Image.alpha_composite(im.convert("RGBA"), layer).convert("RGB")


def edit(src, im, name, out_base, rng, reject=None):
    """Writes one edited copy; returns its file name."""
    w, h = im.size
    if name == "orig":
        dst = out_base + os.path.splitext(src)[1].lower()
        shutil.copyfile(src, dst)
        return dst
    if name == "png":
        dst = out_base + ".png"
        im.save(dst)
        return dst
    dst = out_base + ".jpg"
    if name == "exif6":
        exif = Image.Exif()
        exif[0x0112] = 6  # the viewer turns it a quarter clockwise back
        im.transpose(Image.Transpose.ROTATE_90).save(dst, quality=92, exif=exif)
        return dst
    ops = {
        "crop10": lambda: im.crop((w // 10, h // 10, w, h)),
        "crop10c": lambda: im.crop((w // 20, h // 20, w - w // 20, h - h // 20)),
        "cropr": lambda: _random_crop(im, rng, reject),
        "cropr2": lambda: _random_crop(im, rng, reject),
        "wmark": lambda: _watermark(im, rng),
        "rot3": lambda: im.rotate(-3, resample=Image.Resampling.BICUBIC),
        "q15": lambda: im,
        "half": lambda: im.resize((max(1, w // 2), max(1, h // 2)), Image.Resampling.LANCZOS),
        "gray": lambda: ImageOps.grayscale(im),
        "gamma06": lambda: _gamma(im, 0.6),
        "gamma16": lambda: _gamma(im, 1.6),
        "letterbox": lambda: _letterbox(im),
        "rot90": lambda: im.transpose(Image.Transpose.ROTATE_270),
        "rot180": lambda: im.transpose(Image.Transpose.ROTATE_180),
        "rot270": lambda: im.transpose(Image.Transpose.ROTATE_90),
        "mirror": lambda: im.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
    }
    ops[name]().save(dst, quality=15 if name == "q15" else 92)
    return dst


# Telling pictures apart. The corpus holds many pictures more than once:
# re-encoded, resized, tinted, mirrored, and cropped (often several crops
# of one scene, some inside others). A picture is inside another when its
# whole (or its crop10 or crop10c), turned or mirrored any way, correlates
# at least SAME_PICTURE_NCC with a window of the other (12 x 12 grey grids; a window keeps 55-100 %
# of each side, at any place: the best of a coarse grid of windows, then
# refined by steps of place and size). Two sources one inside the other are
# never both chosen, and a random crop inside another group's original is
# drawn again, so that every pair of groups holds different pictures. Pairs
# just under it are the look-alikes: crops of one scene that overlap (a
# pan, a burst) or scenes of one kind.
SAME_PICTURE_NCC = 0.8
_G = 12  # the grids compared
_SCALES = (0.55, 0.65, 0.75, 0.85, 0.93, 1.0)


def _norm(a):
    a = numpy.asarray(a, dtype=numpy.float32).ravel()
    a = a - a.mean()
    return a / max(1e-6, float(numpy.sqrt((a * a).sum())))


def _grid(g, box):
    """The box (x0, y0, x1, y1 in pixels, fractional) of a 128 x 128 grey
    array as a normalised 12 x 12 grid."""
    return _norm(Image.fromarray(g).resize((_G, _G), Image.Resampling.BOX, box=box))


def _gray128(im):
    return numpy.asarray(im.convert("L").resize((128, 128), Image.Resampling.BOX))


class _Pic:
    """A picture's 128 x 128 grey array, its whole turned the 8 ways and
    the grids of its coarse windows (boxes in `boxes`)."""

    def __init__(self, im):
        self.g = _gray128(im)
        self.turns = numpy.array([_grid(numpy.ascontiguousarray(
            numpy.rot90(self.g, t % 4)[:, ::-1] if t >= 4 else numpy.rot90(self.g, t % 4)),
            (0, 0, 128, 128)) for t in range(8)])
        self.boxes = [(fx * 128, fy * 128, (fx + kx) * 128, (fy + ky) * 128)
                      for kx in _SCALES for ky in _SCALES
                      for fx in numpy.linspace(0, 1 - kx, 4 if kx < 1 else 1)
                      for fy in numpy.linspace(0, 1 - ky, 4 if ky < 1 else 1)]
        self.wins = numpy.array([_grid(self.g, b) for b in self.boxes])
        # the whole and the fixed crops (crop10, crop10c), turned every way
        self.parts = numpy.array([
            _grid(numpy.ascontiguousarray(numpy.rot90(p, t % 4)[:, ::-1] if t >= 4
                                          else numpy.rot90(p, t % 4)), (0, 0, p.shape[1], p.shape[0]))
            for p in (self.g, self.g[13:, 13:], self.g[6:122, 6:122]) for t in range(8)])


def _inside(small, big, starts=3):
    """How well a whole (grids of small's turns, T x G*G) is a window of
    big: the best correlation, from the best coarse windows refined."""
    scores = small @ big.wins.T
    best = float(scores.max())
    if best < 0.5:
        return best  # far from it: not refined
    for flat in numpy.argsort(scores, axis=None)[::-1][:starts]:
        t, w = numpy.unravel_index(flat, scores.shape)
        q, box = small[t], list(big.boxes[w])
        v = float(q @ _grid(big.g, tuple(box)))
        for step in (6.0, 3.0, 1.5, 0.75):
            moved = True
            while moved:
                moved = False
                for p in range(4):
                    for d in (-step, step):
                        b = list(box)
                        b[p] += d
                        if b[0] < 0 or b[1] < 0 or b[2] > 128 or b[3] > 128 or \
                                b[2] - b[0] < 0.55 * 128 or b[3] - b[1] < 0.55 * 128:
                            continue
                        c = float(q @ _grid(big.g, tuple(b)))
                        if c > v + 1e-6:
                            v, box, moved = c, b, True
        best = max(best, v)
    return best


def _same_picture(x, y):
    """Is one inside the other (its whole, or its crop10 or crop10c)?"""
    return max(_inside(x.parts, y), _inside(y.parts, x)) >= SAME_PICTURE_NCC


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", nargs="+")
    ap.add_argument("out")
    ap.add_argument("--groups", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    files = sorted(f for src in a.src for f in glob.glob(os.path.join(src, "*"))
                   if f.lower().endswith((".jpg", ".jpeg")))
    usable = []
    for f in files:
        try:
            with Image.open(f) as im:
                if im.mode in ("RGB", "L") and min(im.size) >= 64 and \
                        (im.getexif().get(0x0112, 1) in (0, 1)):
                    usable.append(f)
        except Exception:
            pass
    if len(usable) < a.groups:
        sys.exit(f"gen_hardset: {a.src}: {len(usable)} usable JPEGs, {a.groups} asked")
    rng = random.Random(a.seed)
    rng.shuffle(usable)
    pics = []
    for f in usable:
        with Image.open(f) as im:
            pics.append(_Pic(im))
    turns = numpy.array([p.turns for p in pics])  # (N, 8, G*G)
    wins = numpy.array([p.wins for p in pics])  # (N, W, G*G)
    flat_wins = wins.reshape(-1, wins.shape[-1])

    def coarse(i):
        """How alike source i and every source are, on the coarse windows:
        the best correlation of either's whole (turned) with a window of
        the other."""
        x = (turns[i] @ flat_wins.T).reshape(8, len(usable), -1).max(axis=(0, 2))
        y = (turns.reshape(-1, turns.shape[-1]) @ wins[i].T).reshape(len(usable), -1).max(axis=1)
        return numpy.maximum(x, y)

    # greedily: every other group the source most like one already chosen
    # (a look-alike), the others the next at random; never one inside another
    chosen, near = [0], coarse(0)
    near[0] = 9
    while len(chosen) < a.groups:
        free = numpy.flatnonzero(near < SAME_PICTURE_NCC)
        if not len(free):
            sys.exit(f"gen_hardset: {a.src}: only {len(chosen)} different pictures, "
                     f"{a.groups} asked")
        i = int(free[numpy.argmax(near[free])]) if len(chosen) % 2 else int(free[0])
        if any(_same_picture(pics[i], pics[c]) for c in chosen):
            near[i] = 9
            continue
        chosen.append(i)
        near = numpy.maximum(near, coarse(i))
        near[chosen] = 9

    def inside_other(im, g):
        """Is a crop of group g's picture inside another group's?"""
        q = _Pic(im).turns
        return any(_inside(q, pics[c]) >= SAME_PICTURE_NCC
                   for k, c in enumerate(picked) if k != g)

    picked = list(chosen)
    chosen = [usable[i] for i in chosen]
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for g, src in enumerate(chosen):
        with Image.open(src) as im0:
            im = im0.convert("RGB")
        for name in EDITS:
            erng = random.Random(f"{a.seed}/{g}/{name}")
            check = (lambda c, g=g: inside_other(c, g)) if name.startswith("cropr") else None
            dst = edit(src, im, name, os.path.join(a.out, f"g{g:03d}_{name}"), erng, check)
            rows.append((os.path.basename(dst), g, name))
    with open(os.path.join(a.out, "GROUND_TRUTH.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file", "group", "edit"])
        w.writerows(rows)
    print(f"gen_hardset: {len(rows)} files, {a.groups} groups of {len(EDITS)} "
          f"({a.groups // 2} look-alike originals) in {a.out}")


if __name__ == "__main__":
    main()
