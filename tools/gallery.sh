#!/usr/bin/env bash
# Runs example scenes in full and makes the gallery: for each scene, docs/gallery/NAME.png (its
# first, middle and last previews side by side, 768 pixels wide) and a line in
# docs/gallery/times.tsv (wall seconds, frames, threads, machine); then writes docs/gallery.md
# from those lines and the scenes' header comments.
#
#   tools/gallery.sh [--bin PATH] [--threads N] [--jobs J] [--frames F] [--out DIR] [SCENE.toml ...]
#
# With no scenes it runs every scene in scenes/. --jobs runs that many scenes at once (each
# with --threads threads; default 2 threads, 1 job). --frames runs only the first F frames
# (for the paper-scale scenes that take hours). A scene run again replaces its line.
# The pictures need ffmpeg: on a machine without it, copy the run directories (their
# preview_*.png suffice) to one that has it and run `tools/gallery.sh --pictures --out DIR`
# there. `tools/gallery.sh --page` only rewrites docs/gallery.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/tidepool
threads=2
jobs=1
out=out/gallery
page_only=0
frames_arg=""
pictures_only=0
failed=0
scenes=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --frames) frames_arg="--frames $2"; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --page) page_only=1; shift ;;
        --pictures) pictures_only=1; shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        -*) echo "gallery.sh: unknown option $1" >&2; exit 2 ;;
        *) scenes+=("$1"); shift ;;
    esac
done
mkdir -p docs/gallery
touch docs/gallery/times.tsv

# A run directory's first, middle and last previews side by side, as docs/gallery/NAME.png.
picture() {
    local dir=$1 name previews
    name=$(basename "$dir")
    previews=$(ls "$dir"/preview_*.png)
    ffmpeg -loglevel error -y -i "$(echo "$previews" | head -n 1)" \
        -i "$(echo "$previews" | sed -n "$(($(echo "$previews" | wc -l) / 2 + 1))p")" -i "$(echo "$previews" | tail -n 1)" \
        -filter_complex "[0][1][2]hstack=inputs=3,scale=768:-2" "docs/gallery/$name.png"
}

# One scene: run it, time it, print its line for times.tsv; then its picture where ffmpeg is.
run_one() {
    local scene=$1 name dir start end frames
    name=$(basename "$scene" .toml)
    dir="$out/$name"
    rm -rf "$dir"
    start=$(date +%s.%N)
    if ! "$bin" run "$scene" --out "$dir" --threads "$threads" $frames_arg --quiet >"$out/$name.log" 2>&1; then
        echo "gallery.sh: $scene failed, see $out/$name.log" >&2
        return 1
    fi
    end=$(date +%s.%N)
    frames=$(tail -n 1 "$dir/stats.jsonl" | grep -o '"frame":[0-9]*' | cut -d: -f2)
    printf '%s\t%.0f\t%d\t%s\t%s\n' "$name" "$(echo "$end - $start" | awk '{print $1 - $3}')" "$frames" "$threads" "$machine"
    if command -v ffmpeg >/dev/null; then picture "$dir"; fi
}
export -f run_one picture
machine="$(nproc)-core $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//; s/([RTM]*)//g')"
export bin threads out machine frames_arg

if [ "$pictures_only" = 1 ]; then
    for dir in "$out"/*/; do picture "${dir%/}"; done
elif [ "$page_only" = 0 ]; then
    [ ${#scenes[@]} -gt 0 ] || scenes=(scenes/*.toml)
    mkdir -p "$out"
    # A scene that fails is reported and left out; the others still go into the page.
    printf '%s\n' "${scenes[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' >"$out/new.tsv" || failed=1
    # New lines replace the old ones of the same scene. (Not `NR == FNR`: with no new line,
    # when every scene failed, it would read the old table as the new one and empty it.)
    awk -F'\t' 'FILENAME == ARGV[1] { new[$1]; next } !($1 in new)' "$out/new.tsv" docs/gallery/times.tsv >"$out/old.tsv"
    sort "$out/old.tsv" "$out/new.tsv" >docs/gallery/times.tsv
fi

# The page: each scene's header comment (the lines before its first blank line), its
# previews and its time.
{
    echo "# Gallery"
    echo
    echo "Every example scene in \`scenes/\`, run by \`tools/gallery.sh\`: each picture is the scene's"
    echo "first, middle and last preview side by side, and the time is the wall time of the run"
    echo "(\`tidepool run SCENE --threads N\`, modal bases computed afresh where the machine had none"
    echo "cached) on the machine named. The paper-scale scenes, which take hours, ran only their first"
    echo "frames; their headers give the measured cost per substep and the estimated total. Run the"
    echo "script to remake a picture after changing a scene."
    while IFS=$'\t' read -r name seconds frames threads machine; do
        echo
        echo "## $name"
        echo
        sed -n '/^#/!q; s/^# \{0,1\}//p' "scenes/$name.toml"
        echo
        echo "![$name](gallery/$name.png)"
        echo
        total=$(grep -m1 '^frames' "scenes/$name.toml" | grep -o '[0-9]*' | head -n 1)
        [ "$frames" = "$total" ] || frames="the first $frames of $total"
        echo "\`scenes/$name.toml\`: $frames frames in $(awk -v s="$seconds" 'BEGIN { if (s < 120) printf "%d s", s; else printf "%.1f min", s / 60 }') on $threads threads ($machine)."
    done <docs/gallery/times.tsv
} >docs/gallery.md
exit "$failed"
