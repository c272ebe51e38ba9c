#!/usr/bin/env bash
# Fills fuzz/corpus/<target>/ (git-ignored) with small seeds: the repo's
# fixtures, ../shared/corpus when present, and the structured seeds that
# mkseeds writes (pack shards, catalog indexes). Existing files are kept, so
# what earlier runs found stays in the corpus. Usage: seed.sh CORPUS MKSEEDS
set -euo pipefail
corpus=$1
mkseeds=$2
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${FERRY_CORPUS:-$root/../shared/corpus}
mkdir -p "$corpus"/{decode,probe,pack,list,catalog,options,video}

# the crafted files of the decoders' hostile-input tests (tests/gen/gen_hostile.py)
hostile="$corpus/.hostile"
if command -v python3 >/dev/null; then
  python3 "$root/tests/gen/gen_hostile.py" "$hostile"
else
  echo "fuzz: no python3: the crafted seeds of tests/gen/gen_hostile.py are left out"
fi

# Images up to 64 KiB: big inputs make slow fuzzing.
images=()
for d in "$root/tests/fixtures" "$shared/bad" "$shared/formats" "$hostile"; do
  [ -d "$d" ] || continue
  while IFS= read -r -d '' f; do images+=("$f"); done < <(
    find "$d" -type f -size -64k \( -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.png' \
      -o -iname '*.webp' -o -iname '*.gif' -o -iname '*.bmp' -o -iname '*.tiff' -o -iname '*.heic' \
      -o -iname '*.avif' -o -iname '*.dng' -o -iname '*.raf' -o -iname '*.cr3' \) -print0)
done
for f in "${images[@]}"; do
  name=$(printf '%s' "$f" | cksum | cut -d' ' -f1)
  [ -e "$corpus/probe/$name" ] || cp "$f" "$corpus/probe/$name"
  # decode: a mode byte (options) first; 0 = defaults, 0x97 = crop + scaling
  for mode in 00 97; do
    out="$corpus/decode/$name-$mode"
    [ -e "$out" ] || { printf "\\x$mode"; cat "$f"; } >"$out"
  done
done

# video: the small fixtures (under 64 KiB), each with the mode byte (fuzz_video.c) 0, 1, 2, 4
for f in "$root"/tests/fixtures/video/*.mp4 "$shared"/video/*.mp4 "$shared"/video/*.webm; do
  [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 65536 ] || continue
  name=$(printf '%s' "$f" | cksum | cut -d' ' -f1)
  for mode in 00 01 02 04; do
    out="$corpus/video/$name-$mode"
    [ -e "$out" ] || { printf "\\x$mode"; cat "$f"; } >"$out"
  done
done

lists=(
  $'a.jpg\nb/c.png,1\n# comment\n\n/abs/d.webp,0\n'
  $'x.jpg,2\r\ny.jpg,  3\nz.jpg,-1\n'
  $'dir with space/e.JPEG,12\n,5\nf.png,\n'
)
for i in "${!lists[@]}"; do printf '%s' "${lists[$i]}" >"$corpus/list/seed-$i"; done

# options: the option's number (its flag with 34 added), then the text
options=('\x00256' '\x220' '\x05centre' '\x070.08,1' '\x0c0.5,0.5,0.5' '\x19cuda:1'
  '\x3cMiB' '\x0a' '\x2c' '\x1118446744073709551615')
for i in "${!options[@]}"; do printf "${options[$i]}" >"$corpus/options/seed-$i"; done

"$mkseeds" "$corpus"
# camera raws with maker notes, and in RAF and CR3 containers (LibRaw's parsers)
if command -v python3 >/dev/null; then
  python3 "$root/fuzz/raw_seeds.py" "$corpus"
else
  echo "fuzz: no python3: the raw seeds with maker notes (fuzz/raw_seeds.py) are left out"
fi
echo "fuzz: corpus in $corpus: $(find "$corpus" -type f | wc -l) files"
