"""The HTML duplicate report opened in headless Chromium (Debian's
chromium): it loads offline, shows the expected groups with every thumbnail
decoded, and the keeper of each group marked first. (The review page at
scale, bulk choices and the decisions file: test_review_page.py.)"""
import base64
import html.parser
import json
import re
import shutil
import subprocess

import pytest

from cdp_pipe import CHROMIUM, dump_dom, needs_chromium
from ferrylib import CORPUS, FERRY_BIN, ROOT

FIX = ROOT / "tests" / "fixtures" / "hash"


class Dom(html.parser.HTMLParser):
    """Collects the body's attributes and, per group section, its figures."""

    def __init__(self):
        super().__init__()
        self.body, self.groups = {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "section" and "group" in a.get("class", ""):
            self.groups.append({"size": int(a["data-size"]), "members": []})
        elif tag == "figure" and self.groups:
            self.in_figure = True
            self.groups[-1]["members"].append(
                (a["data-path"], "keeper" in a.get("class", ""), int(a["data-distance"])))
        elif tag == "img" and getattr(self, "in_figure", False):
            # offline: embedded, or in the sidecar folder beside the page
            assert a["src"].startswith(("data:image/jpeg;base64,", "report.thumbs/")), a["src"]

    def handle_endtag(self, tag):
        if tag == "figure":
            self.in_figure = False


def render(path):
    """The DOM after load (scripts run), from headless Chromium."""
    dom = Dom()
    dom.feed(dump_dom(path.as_uri()))
    return dom


def page_data(path):
    """The groups the page carries (its JSON blob), rendered or not."""
    m = re.search(r'<script type="application/json" id="ferry-data">(.*?)</script>',
                  path.read_text(), re.S)
    return json.loads(m.group(1))


def make_report(tmp_path, pics):
    cat, page = tmp_path / "c.fidx", tmp_path / "report.html"
    r = subprocess.run([FERRY_BIN, "hash", pics, "-o", cat, "-q"], capture_output=True, text=True)
    assert r.returncode in (0, 3), r.stderr
    r = subprocess.run([FERRY_BIN, "dupes", cat, "--format", "html", "-o", page],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return page, r.stderr


@needs_chromium
def test_report_shows_groups_with_thumbnails(tmp_path):
    pics = tmp_path / "pics"
    pics.mkdir()
    for i in range(3):
        shutil.copy(FIX / "rgb420.jpg", pics / f"a{i}.jpg")
    shutil.copy(FIX / "rgb444.jpg", pics / "a_big.jpg")
    shutil.copy(FIX / "progressive.jpg", pics / "b0.jpg")
    shutil.copy(FIX / "progressive.jpg", pics / "b1.jpg")
    shutil.copy(FIX / "palette.png", pics / "alone.png")
    page, _ = make_report(tmp_path, pics)
    text = page.read_text()
    assert "<figure" not in text  # the groups are data, rendered a screenful at a time
    assert page_data(page)["groups"] == [4, 2]
    dom = render(page)
    assert dom.body["data-groups"] == "2"
    assert [g["size"] for g in dom.groups] == [4, 2]
    figures = sum(len(g["members"]) for g in dom.groups)
    assert dom.body.get("data-thumbs-loaded") == str(figures)  # every thumbnail decoded
    assert dom.body.get("data-thumbs-broken") == "0"
    for g in dom.groups:
        assert g["members"][0][1] and not any(m[1] for m in g["members"][1:])
        assert g["members"][0][2] == 0
    assert dom.groups[0]["members"][0][0].endswith("a_big.jpg")  # largest file keeps


@needs_chromium
@pytest.mark.skipif(not (CORPUS / "dupes").is_dir(), reason=f"shared corpus not found at {CORPUS}")
def test_report_on_the_dupes_corpus(tmp_path):
    page, summary = make_report(tmp_path, CORPUS / "dupes")
    dom = render(page)
    groups = int(summary.split(" groups")[0].split()[-1])
    assert int(dom.body["data-groups"]) == groups
    figures = sum(len(g["members"]) for g in dom.groups)  # those on screen
    assert 0 < len(dom.groups) <= groups and figures > 0
    assert dom.body.get("data-thumbs-loaded") == str(figures)
    data = page_data(page)
    assert len(data["groups"]) == groups
    thumbs = sorted((tmp_path / "report.thumbs").glob("*.jpg"))
    assert len(thumbs) == sum(data["groups"])  # a thumbnail for every file
    assert all(t.read_bytes()[:2] == b"\xff\xd8" for t in thumbs)
    # the groups are the ground truth's, with the pictures it holds twice
    # joined (tests/fixtures/corpus_dupes_same_picture.csv): one label each
    import csv
    import os
    from test_hash_cli import same_picture_truth
    truth = {r["file"]: int(r["group"])
             for r in csv.DictReader(open(CORPUS / "dupes" / "GROUND_TRUTH.csv"))}
    label = same_picture_truth(truth)
    files, at, pure = data["files"], 0, []
    for n in data["groups"]:
        pure.append(len({label[f[1]] for f in files[at:at + n]}) == 1)
        at += n
    assert sum(pure) >= 0.95 * len(pure)


@needs_chromium
def test_report_acts(tmp_path):
    """The page people act on, clicked in Chromium: the keeper changed, a
    file unticked, a picture opened large; the move list saved from the page
    is what `ferry dupes --apply-list` then moves (dry run, then --apply with
    its undo log). A screenshot is kept (FERRY_REPORT_SHOT=PATH)."""
    import csv
    import io
    import os
    from cdp_pipe import Browser
    pics = tmp_path / "pics"
    pics.mkdir()
    for i in range(3):
        shutil.copy(FIX / "rgb420.jpg", pics / f"a{i}.jpg")
    shutil.copy(FIX / "rgb444.jpg", pics / "a_big.jpg")  # the largest file: the keeper
    shutil.copy(FIX / "progressive.jpg", pics / "b0.jpg")
    shutil.copy(FIX / "progressive.jpg", pics / "b1.jpg")
    page, _ = make_report(tmp_path, pics)
    b = Browser(CHROMIUM, 900, 700)
    try:
        b.open(page.as_uri())
        assert b.js("document.querySelectorAll('section.group').length") == 2
        assert b.js("document.body.dataset.moveCount") == "4"  # every non-keeper ticked
        keeper = "figure.keeper[data-path$='/a_big.jpg']"
        assert b.js(f"!!document.querySelector(\"{keeper}\")")
        # another keeper for group 0: a1 keeps, a_big is ticked to move instead
        b.click("figure[data-path$='/a1.jpg'] input.keep")
        assert b.js("document.querySelector(\"figure[data-path$='/a1.jpg']\")"
                    ".classList.contains('keeper')")
        assert b.js("document.querySelector(\"figure[data-path$='/a_big.jpg'] input.move\")"
                    ".checked")
        assert b.js("document.querySelector(\"figure[data-path$='/a1.jpg'] input.move\")"
                    ".disabled")
        # b1 stays where it is
        b.click("figure[data-path$='/b1.jpg'] input.move")
        assert b.js("document.body.dataset.moveCount") == "3"
        rows = list(csv.DictReader(io.StringIO(b.js("ferry.moveList()"))))
        moved = sorted(os.path.basename(r["path"]) for r in rows)
        assert moved == ["a0.jpg", "a2.jpg", "a_big.jpg"], moved
        assert {os.path.basename(r["keeper"]) for r in rows} == {"a1.jpg"}
        assert all(base64.b64decode(r["path_b64"]).decode() == r["path"] for r in rows)
        # a click on a picture shows the file itself, large
        b.click("figure[data-path$='/b0.jpg'] img")
        assert b.js("document.body.dataset.preview").endswith("/b0.jpg")
        shown = b.js("new Promise(function(ok){var i=document.querySelector('#preview img');"
                     "function done(){ok([i.naturalWidth, i.src.slice(0, 7)]);}"
                     "if(i.complete&&i.naturalWidth)done();else i.onload=done;})")
        print("preview:", shown)
        assert shown[0] > 0 and shown[1] == "file://", shown  # the file itself
        assert not b.js("document.getElementById('preview').hidden")
        b.screenshot(tmp_path / "preview.png")
        b.click("#preview")
        assert b.js("document.getElementById('preview').hidden")
        b.screenshot(os.environ.get("FERRY_REPORT_SHOT") or tmp_path / "report.png")
        listing = b.js("ferry.moveList()")
    finally:
        b.close()
    lst, aside, cat = tmp_path / "moves.csv", tmp_path / "aside", tmp_path / "c.fidx"
    lst.write_text(listing)
    r = subprocess.run([FERRY_BIN, "dupes", cat, "--apply-list", lst, "--move-dupes-to", aside],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("would move /") == 3 and not aside.exists()
    r = subprocess.run([FERRY_BIN, "dupes", cat, "--apply-list", lst, "--move-dupes-to", aside,
                        "--apply", "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in pics.iterdir()) == ["a1.jpg", "b0.jpg", "b1.jpg"]
    undo = list(csv.DictReader(open(aside / "ferry-moves.csv")))
    assert sorted(os.path.basename(u["from"]) for u in undo) == ["a0.jpg", "a2.jpg", "a_big.jpg"]


# Where each line of an element's text starts: the characters just before
# every line break (a change of line top between two characters).
BREAKS_JS = """(function(sel){var out=[];document.querySelectorAll(sel).forEach(function(el){
var w=document.createTreeWalker(el,NodeFilter.SHOW_TEXT),t,prev=null,top=null,r=document.createRange();
while((t=w.nextNode()))for(var i=0;i<t.length;i++){r.setStart(t,i);r.setEnd(t,i+1);
var b=r.getClientRects();if(!b.length)continue;var y=Math.round(b[0].top);
if(top!==null&&y>top+2)out.push(prev);top=y;prev=t.data[i];}});return out;})"""


@needs_chromium
def test_report_paths_wrap_between_folders(tmp_path):
    """A long path under a thumbnail wraps only after a '/', never inside a
    folder or file name (the issue: paths wrapped mid-word)."""
    import pathlib
    import tempfile
    from cdp_pipe import Browser
    # a short root: every name in the paths fits a column on its own (pytest's
    # tmp_path holds names longer than a column, which may break anywhere)
    short = tempfile.TemporaryDirectory(prefix="fy", dir="/tmp")
    tmp_path = pathlib.Path(short.name)
    pics = tmp_path / "pics"
    deep = pics.joinpath(*[f"folder{i:02d}name" for i in range(8)])
    deep.mkdir(parents=True)
    shutil.copy(FIX / "rgb420.jpg", deep / "holiday_photo.jpg")
    shutil.copy(FIX / "rgb420.jpg", deep / "holiday_copy.jpg")
    page, _ = make_report(tmp_path, pics)
    b = Browser(CHROMIUM, 700, 700)
    try:
        b.open(page.as_uri())
        breaks = b.js(BREAKS_JS + "('figcaption .path')")
        assert len(breaks) >= 4, breaks  # the paths do wrap in a 150 px column
        assert set(breaks) == {"/"}, breaks
    finally:
        b.close()
        short.cleanup()
