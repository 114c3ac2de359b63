#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bash cmake/function_size.sh BUILD_DIR
# Lists every function in src/**/*.cpp longer than 60 lines (clang-tidy's
# readability-function-size, LineThreshold 60: lines of the body, blank and comment lines
# included) as "file:line function N lines", and exits 1 if there is any. BUILD_DIR is a
# configured build tree: its compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS) gives each
# file's flags. CLANG_TIDY overrides the clang-tidy binary (default clang-tidy-14).
set -euo pipefail

build=${1:?usage: cmake/function_size.sh BUILD_DIR}
src_root=$(cd "$(dirname "$0")/.." && pwd)
tidy=${CLANG_TIDY:-clang-tidy-14}
[[ -f $build/compile_commands.json ]] ||
    { echo "function_size: no $build/compile_commands.json (configure the build first)" >&2; exit 2; }

config='{Checks: "-*,readability-function-size", CheckOptions: [{key: readability-function-size.LineThreshold, value: 60}]}'
report=$(mktemp)
outs=$(mktemp -d)
trap 'rm -rf "$report" "$outs"' EXIT
# One clang-tidy per file, $JOBS (default nproc) at a time, each into its own file; the report
# is their concatenation in file order. The compile commands are GCC's: clang ignores the flags
# it does not know instead of failing, and gets the C++17 that GCC defaults to (CMake then
# passes no -std).
tidy_one() {  # $1 = index, $2 = source file
    "$tidy" --quiet -p "$build" --config="$config" --extra-arg-before=-std=gnu++17 \
        --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-ignored-optimization-argument \
        --extra-arg=-Wno-unused-command-line-argument "$2" >"$outs/$1" 2>/dev/null || true
}
export -f tidy_one
export tidy build config outs
find "$src_root/src" -name '*.cpp' | sort | while read -r file; do
    grep -q "\"file\": \"$file\"" "$build/compile_commands.json" || continue  # not in this build
    echo "$file"
done | awk '{ printf "%05d %s\n", NR, $0 }' \
    | xargs -r -P "${JOBS:-$(nproc)}" -n 2 bash -c 'tidy_one "$0" "$1"'
find "$outs" -type f | sort | xargs -r cat >"$report"
# A file clang could not parse would be measured partly or not at all.
if grep -q ': error: ' "$report"; then
    grep ': error: ' "$report" >&2
    echo "function_size: clang-tidy could not parse every file" >&2
    exit 2
fi

# warning: function 'f' exceeds ...   then   note: N lines including whitespace and comments
offenders=$(awk -v root="$src_root/" '
    /warning: function .* exceeds recommended size/ {
        split($0, loc, ":"); file = loc[1]; line = loc[2]
        match($0, /function \x27[^\x27]*\x27/); fn = substr($0, RSTART + 10, RLENGTH - 11)
        next
    }
    fn != "" && /note: [0-9]+ lines including/ {
        match($0, /note: [0-9]+/); n = substr($0, RSTART + 6, RLENGTH - 6)
        sub(root, "", file); printf "%s:%s %s %s lines\n", file, line, fn, n; fn = ""
    }' "$report" | sort -u)

if [[ -n $offenders ]]; then
    echo "$offenders"
    echo "function_size: $(wc -l <<<"$offenders") function(s) over 60 lines" >&2
    exit 1
fi
echo "function_size: no function in src/ over 60 lines"
