/* review_script.js — the review page's script (`ferry dupes --format html`;
 * docs/DEDUP.md, "The review page"). Embedded in the library at build time
 * (CMakeLists.txt's ferry_embed, scripts/gen_embedded.py:
 * FY_PAGE_REVIEW_SCRIPT_BYTES); src/catalog/report_html.c writes it into the
 * page, after the groups as one JSON blob (the element #ferry-data).
 *
 * It renders only the groups on screen (fixed-height rows of tiles, windowed
 * as the page scrolls), so its thumbnails are fetched as they come into view;
 * the choices live in typed arrays, kept in localStorage under the report's
 * identity, and saved as the decisions file (`ferry dupes --decisions`) or
 * the move list (`--apply-list`).
 *
 * Data per file (D.files[i]): [dir, name, size, mtime_ns, width, height,
 * distance to the keeper, flags (1 reference, 2 a chosen keeper, 4 to stay,
 * 8 no preview), the thumbnail (base64 when embedded, 0 in the sidecar folder
 * D.thumbs) or why there is none, path_b64 when the name is not plain UTF-8];
 * D.groups: each group's size, files in group order (the keeper first).
 *
 * The browser tests read the page's state from document.body.dataset
 * (moveCount, thumbsLoaded, thumbsBroken, clickMs, readyMs, preview, groups)
 * and call window.ferry. ES5 syntax in one function: the page is one file. */
(function () {
  'use strict';
  // D: the data; F: its files, N of them; G groups, group g the files
  // gs[g] .. gs[g+1]-1; dirs: the folders (F[i][0] indexes them).
  // keeper[g]: the file kept (base[g]: ferry's choice); move[i]: 1 to move;
  // apartG[g], apartF[i]: set apart as not duplicates.
  var D, F, N, G, gs, dirs, keeper, base, move, apartG, apartF, moveCount = 0,
    // the layout: tiles per row, their width, each group's top (gTop[G]: the end)
    cols = 1, tileW = 160, gTop, main, space,
    // the sections on screen by group, the tiles on screen by file
    shown = {}, figOf = {}, loaded = 0, broken = 0, saveTimer = 0, KEY, restored = 0,
    // the preview overlay and its image
    pv, big;
  // heights and gaps in px: a group's heading, a row of tiles, between tiles,
  // a group's inner margin, between groups (review_style.css fits them)
  var HEAD = 34, TILE = 250, GAP = 10, PAD = 10, SEP = 12;
  function $(id) {
    return document.getElementById(id);
  }
  function path(i) {
    var f = F[i], d = dirs[f[0]];
    return d + '/' + f[1];
  }
  // a reference file (--reference): never moved
  function isRef(i) {
    return F[i][7] & 1;
  }
  // the group of file i (binary search over gs)
  function grp(i) {
    var lo = 0, hi = G;
    while (hi - lo > 1) {
      var m = (lo + hi) >> 1;
      if (gs[m] <= i) lo = m;
      else hi = m;
    }
    return lo;
  }
  // the path as base64 of its UTF-8 bytes (path_b64 when given: names not UTF-8)
  function b64(i) {
    var f = F[i];
    if (f[9]) return f[9];
    var u = new TextEncoder().encode(path(i)), s = '';
    for (var k = 0; k < u.length; k += 8192)
      s += String.fromCharCode.apply(null, u.subarray(k, k + 8192));
    return btoa(s);
  }
  // whether file i may be ticked to move
  function movable(i) {
    var g = grp(i);
    return keeper[g] !== i && !isRef(i) && !apartG[g] && !apartF[i];
  }
  function setMove(i, v) {
    v = v && movable(i) ? 1 : 0;
    if (move[i] !== v) {
      moveCount += v ? 1 : -1;
      move[i] = v;
    }
  }
  // file i the keeper of group g; the old keeper moves unless it may not
  function setKeeper(g, i) {
    var old = keeper[g];
    if (old === i) return;
    keeper[g] = i;
    setMove(i, 0);
    if (!isRef(old) && !apartF[old] && !apartG[g]) setMove(old, 1);
  }
  // group g (setApartF: file i) set apart as not duplicates (v 1): nothing moves
  function setApartG(g, v) {
    apartG[g] = v;
    for (var i = gs[g]; i < gs[g + 1]; i++) setMove(i, v ? 0 : 1);
  }
  function setApartF(i, v) {
    apartF[i] = v;
    setMove(i, v ? 0 : 1);
  }
  /* layout: every group a block of a heading and rows of tiles of one height */
  function layout() {
    var w = space.clientWidth - 2 * PAD - 2;
    cols = Math.max(1, Math.floor((w + GAP) / (150 + GAP)));
    tileW = Math.floor((w - (cols - 1) * GAP) / cols);
    gTop = new Float64Array(G + 1);
    var y = 0;
    for (var g = 0; g < G; g++) {
      gTop[g] = y;
      y += HEAD + Math.ceil((gs[g + 1] - gs[g]) / cols) * TILE + SEP;
    }
    gTop[G] = y;
    space.style.height = y + 'px';
    for (var k in shown) {
      shown[k].el.remove();
    }
    shown = {};
    figOf = {};
  }
  // the first group ending below y
  function firstGroup(y) {
    var lo = 0, hi = G;
    while (lo < hi) {
      var m = (lo + hi) >> 1;
      if (gTop[m + 1] <= y) lo = m + 1;
      else hi = m;
    }
    return lo;
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  // a path that wraps at its slashes
  function pathNode(p) {
    var s = el('span', 'path'), parts = p.split('/');
    for (var k = 0; k < parts.length; k++) {
      s.appendChild(document.createTextNode(parts[k] + (k < parts.length - 1 ? '/' : '')));
      if (k < parts.length - 1) s.appendChild(el('wbr'));
    }
    s.title = p;
    return s;
  }
  function kib(n) {
    return (n / 1024).toFixed(1) + '\u00a0KiB';
  }
  // the tile of file i of group g: thumbnail, keep / move, not a copy, facts
  function makeFig(g, i) {
    var f = F[i], fig = el('figure', 'member');
    fig.dataset.i = i;
    fig.dataset.path = path(i);
    fig.dataset.pathB64 = b64(i);
    fig.dataset.distance = f[6];
    if (isRef(i)) fig.dataset.reference = '1';
    var t = f[8];
    if (f[7] & 8) {
      var no = el('div', 'noimg', 'no preview');
      no.title = t;
      fig.appendChild(no);
    } else {
      var im = el('img');
      im.alt = '';
      im.title = 'click: the picture large';
      im.decoding = 'async';
      im.onload = function () {
        loaded++;
        document.body.dataset.thumbsLoaded = loaded;
      };
      im.onerror = function () {
        broken++;
        document.body.dataset.thumbsBroken = broken;
      };
      im.src = D.thumbs === null ? 'data:image/jpeg;base64,' + t : D.thumbs + i + '.jpg';
      fig.appendChild(im);
    }
    var c = el('figcaption'), l1 = el('label'), r = el('input', 'keep');
    r.type = 'radio';
    r.name = 'keep-' + g;
    l1.appendChild(r);
    l1.appendChild(document.createTextNode(' keep'));
    var l2 = el('label'), m = el('input', 'move');
    m.type = 'checkbox';
    l2.appendChild(m);
    l2.appendChild(document.createTextNode(' move'));
    c.appendChild(l1);
    c.appendChild(l2);
    var nc = el('button', 'notcopy', 'not a copy');
    nc.type = 'button';
    nc.title = 'this file is not a duplicate of the keeper';
    c.appendChild(nc);
    if (isRef(i)) c.appendChild(el('span', 'nb', ' (reference)'));
    c.appendChild(el('br'));
    if (f[6]) c.appendChild(el('span', 'nb', 'distance ' + f[6] + ' '));
    c.appendChild(el('span', 'nb', f[4] + '\u00d7' + f[5] + ' '));
    c.appendChild(el('span', 'nb', kib(f[2])));
    c.appendChild(el('br'));
    c.appendChild(pathNode(fig.dataset.path));
    fig.appendChild(c);
    return fig;
  }
  // the tile of file i drawn as the choices are
  function paintFig(fig, i) {
    var g = grp(i), k = keeper[g] === i, m = fig.querySelector('input.move');
    fig.classList.toggle('keeper', k);
    fig.classList.toggle('moving', !!move[i]);
    fig.classList.toggle('apart', !!(apartF[i] || apartG[g]));
    fig.querySelector('input.keep').checked = k;
    m.checked = !!move[i];
    m.disabled = !movable(i);
    fig.querySelector('.notcopy').textContent = apartF[i] ? 'a copy after all' : 'not a copy';
    fig.querySelector('.notcopy').hidden = k || !!apartG[g];
  }
  function paintGroup(s) {
    var g = s.g;
    s.el.classList.toggle('apart', !!apartG[g]);
    s.btn.textContent = apartG[g] ? 'duplicates after all' : 'not duplicates';
    for (var i in s.figs) paintFig(s.figs[i], +i);
  }
  // the block of group g: its heading and "not duplicates" button
  function makeSection(g) {
    var n = gs[g + 1] - gs[g], sec = el('section', 'group');
    sec.dataset.group = g;
    sec.dataset.size = n;
    sec.style.top = gTop[g] + 'px';
    sec.style.height = (gTop[g + 1] - gTop[g] - SEP) + 'px';
    var h = el('h2', null, 'group ' + g + ': ' + n + ' files ');
    var b = el('button', 'apartg');
    b.type = 'button';
    b.title = 'none of these files is a copy of another';
    h.appendChild(b);
    sec.appendChild(h);
    space.appendChild(sec);
    return {g: g, el: sec, btn: b, figs: {}};
  }
  // the groups and tiles within half a screen of the view made, the others dropped
  function render() {
    var top = window.scrollY - space.offsetTop, bot = top + window.innerHeight;
    top -= window.innerHeight / 2;
    bot += window.innerHeight / 2;
    var want = {};
    for (var g = firstGroup(Math.max(0, top)); g < G && gTop[g] < bot; g++) {
      want[g] = 1;
      var s = shown[g];
      if (!s) {
        s = shown[g] = makeSection(g);
      }
      // the rows r0 .. r1 of the group on screen: its files a .. z-1
      var r0 = Math.max(0, Math.floor((top - gTop[g] - HEAD) / TILE)),
        r1 = Math.ceil((bot - gTop[g] - HEAD) / TILE),
        a = gs[g] + r0 * cols, z = Math.min(gs[g + 1], gs[g] + r1 * cols);
      for (var i in s.figs) {
        i = +i;
        if (i < a || i >= z) {
          s.figs[i].remove();
          delete s.figs[i];
          delete figOf[i];
        }
      }
      for (i = a; i < z; i++) if (!s.figs[i]) {
        var fig = makeFig(g, i), k = i - gs[g];
        fig.style.top = (HEAD + Math.floor(k / cols) * TILE) + 'px';
        fig.style.left = (PAD + (k % cols) * (tileW + GAP)) + 'px';
        fig.style.width = tileW + 'px';
        s.el.appendChild(fig);
        s.figs[i] = fig;
        figOf[i] = fig;
      }
      paintGroup(s);
    }
    for (var k2 in shown) if (!want[k2]) {
      shown[k2].el.remove();
      for (var j in shown[k2].figs) delete figOf[j];
      delete shown[k2];
    }
  }
  function count() {
    $('count').textContent = moveCount;
    document.body.dataset.moveCount = moveCount;
  }
  // after a choice: repaint (group g, or all on screen), count, remember soon
  function changed(g) {
    if (g == null) {
      for (var k in shown) paintGroup(shown[k]);
    } else if (shown[g]) paintGroup(shown[g]);
    count();
    clearTimeout(saveTimer);
    saveTimer = setTimeout(remember, 300);
  }
  /* the choices kept in this browser, by the report's identity */
  function state() {
    var s = {k: [], m: [], ag: [], af: []};
    for (var g = 0; g < G; g++) {
      if (keeper[g] !== base[g]) s.k.push([g, keeper[g]]);
      if (apartG[g]) s.ag.push(g);
    }
    for (var i = 0; i < N; i++) {
      if (apartF[i]) s.af.push(i);
      if (move[i] !== init(i)) s.m.push(i);
    }
    return s;
  }
  // whether file i moves before any choice: not ferry's keeper, no flag (reference, keeper, stay)
  function init(i) {
    var g = grp(i);
    return i !== gs[g] && !(F[i][7] & 7) ? 1 : 0;
  }
  function remember() {
    saveTimer = 0;
    try {
      var s = state();
      if (s.k.length + s.m.length + s.ag.length + s.af.length)
        localStorage.setItem(KEY, JSON.stringify(s));
      else localStorage.removeItem(KEY);
    } catch (e) {
    }
  }
  // the choices this browser kept for this report, applied
  function restore() {
    var s;
    try {
      s = JSON.parse(localStorage.getItem(KEY) || 'null');
    } catch (e) {
      s = null;
    }
    if (!s) return;
    s.ag.forEach(function (g) {
      if (g < G) setApartG(g, 1);
    });
    s.af.forEach(function (i) {
      if (i < N) setApartF(i, 1);
    });
    s.k.forEach(function (p) {
      if (p[0] < G && p[1] >= gs[p[0]] && p[1] < gs[p[0] + 1]) setKeeper(p[0], p[1]);
    });
    s.m.forEach(function (i) {
      if (i < N) setMove(i, init(i) ? 0 : 1);
    });
    restored = s.k.length + s.m.length + s.ag.length + s.af.length;
  }
  // the kept choices dropped: the page as ferry wrote it
  function forget() {
    try {
      localStorage.removeItem(KEY);
    } catch (e) {
    }
    location.reload();
  }
  /* what the page saves: the decisions for `ferry dupes --decisions`, the move
   * list for --apply-list */
  // file i as the decisions file names it
  function ref(i) {
    var f = F[i], o = {path: path(i)};
    if (f[9]) o.path_b64 = f[9];
    o.size = f[2];
    o.mtime_ns = f[3];
    return JSON.stringify(o);
  }
  function decisions() {
    var L = [];
    (D.apart || []).forEach(function (s) {
      L.push(JSON.stringify({not_duplicates: s}));
    });
    for (var g = 0; g < G; g++) {
      var a = gs[g], z = gs[g + 1], k = keeper[g];
      if (apartG[g]) {
        var m = [];
        for (var i = a; i < z; i++) m.push(ref(i));
        L.push('{"not_duplicates": [' + m.join(', ') + ']}');
        continue;
      }
      if (k !== base[g] || (F[k][7] & 2)) L.push('{"keeper": ' + ref(k) + '}');
      for (i = a; i < z; i++) {
        if (i === k || isRef(i)) continue;
        if (apartF[i]) L.push('{"not_duplicates": [' + ref(k) + ', ' + ref(i) + ']}');
        else if (!move[i]) L.push('{"stay": ' + ref(i) + '}');
      }
    }
    return '{"ferry_decisions": 1, "report": ' + JSON.stringify(D.id) + ', "decisions": [\n' +
      L.join(',\n') + '\n]}\n';
  }
  // a CSV field, quoted when it must be
  function q(s) {
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }
  function moveList() {
    var rows = ['path,keeper,path_b64,keeper_b64'];
    for (var g = 0; g < G; g++) {
      var k = keeper[g];
      for (var i = gs[g]; i < gs[g + 1]; i++)
        if (move[i]) rows.push([q(path(i)), q(path(k)), b64(i), b64(k)].join(','));
    }
    return rows.join('\n') + '\n';
  }
  // text saved as the file name
  function download(name, text, type) {
    var a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], {type: type}));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
  }
  /* bulk choices */
  // the keeper rules of "keep by": the file scoring highest (null: ferry's choice)
  var rules = {
    ferry: null,
    pixels: function (i) { return F[i][4] * F[i][5]; },
    size: function (i) { return F[i][2]; },
    oldest: function (i) { return -Number(F[i][3]); },
    newest: function (i) { return Number(F[i][3]); },
    shortest: function (i) { return -(dirs[F[i][0]].length + F[i][1].length); }
  };
  // every group's keeper by a rule; a reference file is kept before any other
  function keepBy(rule) {
    var f = rules[rule];
    for (var g = 0; g < G; g++) {
      if (apartG[g]) continue;
      var best = base[g];
      if (f) {
        best = gs[g];
        for (var i = gs[g] + 1; i < gs[g + 1]; i++) if (f(i) > f(best)) best = i;
      }
      var r = -1;
      for (i = gs[g]; i < gs[g + 1]; i++) if (isRef(i)) {
        r = i;
        break;
      }
      setKeeper(g, r >= 0 && !isRef(best) ? r : best);
    }
    changed();
  }
  var inDir = null;
  function inFolder(i) {
    return inDir[F[i][0]];
  }
  function under(p, d) {
    return p === d || p.slice(0, d.length + 1) === d + '/';
  }
  // the folder actions: keep its files (one the keeper), untick or tick them
  function folderDo(what) {
    var d = $('folder').value.replace(/\/+$/, '');
    if (!d && $('folder').value !== '/') {
      $('folder').focus();
      return;
    }
    inDir = new Uint8Array(dirs.length);
    for (var j = 0; j < dirs.length; j++) inDir[j] = under(dirs[j], d) ? 1 : 0;
    var n = 0;
    for (var g = 0; g < G; g++) {
      if (apartG[g]) continue;
      var first = -1;
      for (var i = gs[g]; i < gs[g + 1]; i++) {
        if (!inFolder(i)) continue;
        n++;
        if (first < 0) first = i;
        if (what === 'untick' || what === 'keep') setMove(i, 0);
        else setMove(i, 1);
      }
      if (what === 'keep' && first >= 0 && !inFolder(keeper[g])) setKeeper(g, first);
      if (what === 'keep') for (i = gs[g]; i < gs[g + 1]; i++) if (inFolder(i)) setMove(i, 0);
    }
    $('folder-count').textContent = n + ' files in ' + (d || '/');
    changed();
  }
  function allMoves(v) {
    for (var i = 0; i < N; i++) setMove(i, v);
    changed();
  }
  // the keep radios and move boxes
  function onChange(e) {
    var t = e.target, fig = t.closest('figure');
    if (!fig) return;
    var t0 = e.timeStamp, i = +fig.dataset.i, g = grp(i);
    if (t.classList.contains('keep')) setKeeper(g, i);
    else if (t.classList.contains('move')) setMove(i, t.checked ? 1 : 0);
    changed(g);
    done(t0);
  }
  // "not duplicates", "not a copy", and a thumbnail: the picture large
  function onClick(e) {
    var t = e.target, t0 = e.timeStamp;
    if (t.classList.contains('apartg')) {
      var g = +t.closest('section').dataset.group;
      setApartG(g, apartG[g] ? 0 : 1);
      changed(g);
      done(t0);
    } else if (t.classList.contains('notcopy')) {
      var i = +t.closest('figure').dataset.i;
      setApartF(i, apartF[i] ? 0 : 1);
      changed(grp(i));
      done(t0);
    } else if (t.tagName === 'IMG') {
      var f = t.closest('figure');
      big.onerror = function () {
        big.onerror = null;
        big.src = t.src;
      };
      big.src = 'file://' + encodeURI(f.dataset.path).replace(/[?#]/g, encodeURIComponent);
      pv.querySelector('div').textContent = f.dataset.path;
      pv.hidden = false;
      document.body.dataset.preview = f.dataset.path;
    }
  }
  // the time from the click to the layout done, for the browser tests
  function done(t0) {
    void document.body.offsetHeight;
    var ms = performance.now() - t0;
    document.body.dataset.clickMs = ms.toFixed(2);
  }
  // the page set up from the data: state, restored choices, the first screen, events
  function start() {
    D = JSON.parse($('ferry-data').textContent);
    F = D.files;
    N = F.length;
    dirs = D.dirs;
    G = D.groups.length;
    gs = new Int32Array(G + 1);
    for (var g = 0; g < G; g++) gs[g + 1] = gs[g] + D.groups[g];
    keeper = new Int32Array(G);
    base = new Int32Array(G);
    for (g = 0; g < G; g++) keeper[g] = base[g] = gs[g];
    move = new Uint8Array(N);
    apartG = new Uint8Array(G);
    apartF = new Uint8Array(N);
    for (var i = 0; i < N; i++) {
      move[i] = init(i);
      moveCount += move[i];
    }
    KEY = 'ferry-review:' + D.id;
    restore();
    main = document.querySelector('main');
    space = $('space');
    pv = $('preview');
    big = pv.querySelector('img');
    var dl = $('folders');
    dirs.forEach(function (d) {
      var o = document.createElement('option');
      o.value = d || '/';
      dl.appendChild(o);
    });
    layout();
    render();
    count();
    if (restored) {
      $('restored').hidden = false;
      $('restored-n').textContent = restored;
    }
    var ticking = 0;
    window.addEventListener('scroll', function () {
      if (!ticking) {
        ticking = 1;
        requestAnimationFrame(function () {
          ticking = 0;
          render();
        });
      }
    });
    var rw = 0;
    window.addEventListener('resize', function () {
      clearTimeout(rw);
      rw = setTimeout(function () {
        layout();
        render();
      }, 100);
    });
    window.addEventListener('pagehide', function () {
      if (saveTimer) {
        clearTimeout(saveTimer);
        saveTimer = 0;
        remember();
      }
    });
    space.addEventListener('change', onChange);
    space.addEventListener('click', onClick);
    pv.addEventListener('click', function () {
      pv.hidden = true;
      big.removeAttribute('src');
      delete document.body.dataset.preview;
    });
    document.addEventListener('keydown', function (e) {
      if (e.key === 'Escape') pv.click();
    });
    $('none').addEventListener('click', function (e) {
      allMoves(0);
      done(e.timeStamp);
    });
    $('all').addEventListener('click', function (e) {
      allMoves(1);
      done(e.timeStamp);
    });
    $('keep-by').addEventListener('click', function (e) {
      keepBy($('rule').value);
      done(e.timeStamp);
    });
    $('f-keep').addEventListener('click', function (e) {
      folderDo('keep');
      done(e.timeStamp);
    });
    $('f-untick').addEventListener('click', function (e) {
      folderDo('untick');
      done(e.timeStamp);
    });
    $('f-tick').addEventListener('click', function (e) {
      folderDo('tick');
      done(e.timeStamp);
    });
    $('forget').addEventListener('click', forget);
    $('save').addEventListener('click', function () {
      download('ferry-move-list.csv', moveList(), 'text/csv');
    });
    $('save-decisions').addEventListener('click', function () {
      download('ferry-decisions.json', decisions(), 'application/json');
    });
    $('lists').addEventListener('toggle', function () {
      $('move-list').value = moveList();
      $('decisions').value = decisions();
    });
    document.body.dataset.groups = G;
    if (!loaded) document.body.dataset.thumbsLoaded = 0;
    if (!broken) document.body.dataset.thumbsBroken = 0;
    document.body.dataset.readyMs = performance.now().toFixed(1);
  }
  // for the browser tests
  window.ferry = {
    decisions: function () { return decisions(); },
    moveList: function () { return moveList(); },
    render: function () { render(); }
  };
  document.addEventListener('DOMContentLoaded', start);
})();
