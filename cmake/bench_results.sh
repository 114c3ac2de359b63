#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Keeps the "Latest results" sections of docs/benchmarks.md in step with the result files under
# docs/results/ (bash + POSIX awk only: runs on a fresh Debian).
#   cmake/bench_results.sh record NAME FILE COMMAND...
#       copy FILE to docs/results/NAME.csv|json, write docs/results/NAME.meta (date, commit,
#       machine, command), then render. NAME is sweep-<mpi> (FILE: the CSV of mpipcl-bench
#       --csv), auto-<mpi>-<setup> (FILE: a CSV of cmake/bench_auto.sh), coll-<mpi> (FILE: CSVs
#       of mpipcl-bench --collective ... --csv, concatenated, one header or several) or
#       gbench-<mpi> (FILE: the output of mpipcl-gbench --benchmark_out=FILE
#       --benchmark_out_format=json). MPIPCL_MACHINE
#       overrides the machine line (default: cores, architecture and CPU model), MPIPCL_COMMIT
#       the commit (default: git describe of this tree), MPIPCL_MPI the MPI line of gbench-*.
#   cmake/bench_results.sh render
#       rewrite every section of docs/benchmarks.md between
#       "<!-- BEGIN results NAME -->" and "<!-- END results NAME -->" from NAME.csv|json and
#       NAME.meta.
#   cmake/bench_results.sh merge CSV...
#       print one CSV of mpipcl-bench --collective with the medians across several launches'
#       CSVs (merge_launches below).
#   cmake/bench_results.sh merge-app CSV...
#       print one CSV of mpipcl-stencil (cmake/bench_app.sh) from several launches' CSVs: per
#       variant and rank count the row of the launch with the median time per iteration (the
#       lower middle for an even count), its min and max widened to the least and most of all
#       launches, and a launches column.
#   cmake/bench_results.sh show-auto CSV
#       print the auto table of a CSV of cmake/bench_auto.sh.
#   cmake/bench_results.sh show-app CSV
#       print the application table of a CSV of cmake/bench_app.sh (NAME app-<mpi>-<setup>).
#   cmake/bench_results.sh show-compute CSV
#       print the compute table of a CSV of cmake/bench_compute.sh (NAME compute-<mpi>-<setup>
#       when recorded).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
results="$root/docs/results"
doc="$root/docs/benchmarks.md"

# CSV field splitting with quotes (the MPI library string holds commas), for mawk and gawk.
# shellcheck disable=SC2016  # awk code, not shell
awk_csv='
function csvsplit(line, f,    n, i, c, q, cur) {
    n = 0; cur = ""; q = 0
    for (i = 1; i <= length(line); i++) {
        c = substr(line, i, 1)
        if (q) {
            if (c == "\"") {
                if (substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ } else q = 0
            } else cur = cur c
        } else if (c == "\"") q = 1
        else if (c == ",") { f[++n] = cur; cur = "" }
        else cur = cur c
    }
    f[++n] = cur
    return n
}
function meta(file, key,    line, k) {
    while ((getline line < file) > 0) {
        k = line; sub(/:.*/, "", k)
        if (k == key) { close(file); sub(/^[^:]*: */, "", line); return line }
    }
    close(file)
    return ""
}
function header(file, extra) {
    printf "- date %s, commit `%s`\n", meta(file, "date"), meta(file, "commit")
    printf "- machine: %s\n", meta(file, "machine")
    if (extra != "") printf "- MPI: %s\n", extra
    printf "- command: `%s`\n", meta(file, "command")
}
function size_label(b) {
    if (b % 1048576 == 0) return (b / 1048576) " MiB"
    if (b % 1024 == 0) return (b / 1024) " KiB"
    return b " B"
}
function num(v) {
    if (v == "" || v == "nan") return "–"
    if (v + 0 >= 100) return sprintf("%.0f", v)
    if (v + 0 >= 10) return sprintf("%.1f", v)
    return sprintf("%.2f", v)
}
'

# mpipcl-bench CSV -> Markdown: parameters, then per side one table of medians per mode.
render_sweep() {  # $1 = csv, $2 = meta
    awk -v metafile="$2" "$awk_csv"'
    NR == 1 { n = csvsplit($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    {
        csvsplit($0, f)
        mode = f[col["mode"]]; side = f[col["side"]]; size = f[col["size_bytes"]] + 0
        if (!(mode in seen_mode)) { seen_mode[mode] = 1; modes[++nm] = mode }
        if (!(size in seen_size)) { seen_size[size] = 1; sizes[++ns] = size }
        k = mode SUBSEP side SUBSEP size
        have[k] = 1
        perc[k] = f[col["perceived_us_median"]]; eff[k] = f[col["efficiency"]]
        ratio[k] = f[col["ratio_to_multi"]]; extra[k] = f[col["extra_compute_us_median"]]
        xratio[k] = f[col["extra_ratio_to_multi"]]; late[k] = f[col["late_us_median"]]
        sides[side] = 1
        library = f[col["mpi_library"]]; version = f[col["mpipcl_version"]]
        params = sprintf("%s partitions = sender threads, compute %s ms, noise %s %%, %s iterations after %s warm-up, %s repeat(s), seed %s", \
            f[col["partitions"]], f[col["compute_ms"]], f[col["noise_pct"]], f[col["iterations"]], \
            f[col["warmup"]], f[col["repeats"]], f[col["seed"]])
    }
    function table(side, what,    i, j, line, k, v, r) {
        line = "| size |"; for (j = 1; j <= nm; j++) line = line " " modes[j] " |"; print line
        line = "|---|"; for (j = 1; j <= nm; j++) line = line "---|"; print line
        for (i = 1; i <= ns; i++) {
            line = "| " size_label(sizes[i]) " |"
            for (j = 1; j <= nm; j++) {
                k = modes[j] SUBSEP side SUBSEP sizes[i]
                if (!(k in have)) { line = line " – |"; continue }
                if (what == "perceived") { v = num(perc[k]); r = ratio[k] }
                else if (what == "efficiency") { v = num(eff[k]); r = "" }
                else if (what == "late") { v = num(late[k]); r = "" }
                else { v = num(extra[k]); r = xratio[k] }
                if (r != "" && r != "nan") v = v " (" sprintf("%.2f", r) ")"
                line = line " " v " |"
            }
            print line
        }
        print ""
    }
    END {
        header(metafile, library)
        printf "- mpipcl %s; %s\n\n", version, params
        if ("send" in sides) {
            print "Send side, perceived time in µs, median (part modes: ÷ multi in brackets):\n"
            table("send", "perceived")
            print "Send side, efficiency T*/perceived:\n"
            table("send", "efficiency")
            print "Send side, late (last Pready − end of the laggard'\''s compute) in µs, median:\n"
            table("send", "late")
        }
        if ("recv" in sides) {
            print "Receive side, extra compute time in µs, median (part modes: ÷ multi in brackets):\n"
            table("recv", "extra")
        }
    }' "$1"
}


# The auto table (auto-<mpi>-<setup>.csv: mpipcl-bench CSVs of several noise levels, send and
# receive side, concatenated under one header) -> Markdown. Send side, per noise and size:
# part-auto's perceived time against the best forced part mode and the best of single and
# multi, ratios above 1.05 in bold and counted. Receive side: each mode's extra compute time
# against 0.75·d (d = the laggard's delay).
render_auto() {  # $1 = csv, $2 = meta
    awk -v metafile="$2" "$awk_csv"'
    NR == 1 { n = csvsplit($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    $0 == "" || $1 ~ /^mode,/ { next }
    {
        csvsplit($0, f)
        mode = f[col["mode"]]; side = f[col["side"]]; size = f[col["size_bytes"]] + 0
        noise = f[col["noise_pct"]] + 0
        k = side SUBSEP noise SUBSEP size
        if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
        perc[k, mode] = f[col["perceived_us_median"]]
        extra[k, mode] = f[col["extra_compute_us_median"]]
        delay[k] = f[col["laggard_delay_ms"]] * 1000
        if (!(mode in seen_mode)) { seen_mode[mode] = 1; modes[++nm] = mode }
        library = f[col["mpi_library"]]; version = f[col["mpipcl_version"]]
        params = sprintf("%s partitions = sender threads, compute %s ms, %s iterations after %s warm-up, %s repeats (medians of the repeat medians)", \
            f[col["partitions"]], f[col["compute_ms"]], f[col["iterations"]], f[col["warmup"]], f[col["repeats"]])
    }
    function best(k, part,    j, m, v, b) {
        b = ""; bestv = 1e300
        for (j = 1; j <= nm; j++) {
            m = modes[j]
            if (part ? (m !~ /^part-/ || m == "part-auto") : (m != "single" && m != "multi")) continue
            if (!((k, m) in perc) || perc[k, m] == "" || perc[k, m] == "nan") continue
            v = perc[k, m] + 0
            if (v < bestv) { bestv = v; b = m }
        }
        return b
    }
    function cell(r) {
        if (r == "") return "–"
        cells++
        if (r > 1.05) { over++; return sprintf("**%.2f**", r) }
        return sprintf("%.2f", r)
    }
    END {
        header(metafile, library)
        printf "- mpipcl %s; %s\n\n", version, params
        print "Send side, perceived time in µs (median); auto ÷ the best forced part mode and ÷ the best plain mode, above 1.05 in bold; auto ÷ part-persistent, where auto chose persistent, is the spread between two identical configurations:\n"
        print "| noise | size | part-auto | best part | auto ÷ best part | best plain | auto ÷ best plain | auto ÷ part-persistent |"
        print "|---|---|---|---|---|---|---|---|"
        for (i = 1; i <= nk; i++) {
            split(keys[i], q, SUBSEP)
            if (q[1] != "send") continue
            k = keys[i]; a = perc[k, "part-auto"]
            bp = best(k, 1); bpv = bestv; bq = best(k, 0); bqv = bestv
            rp = (a != "" && bp != "") ? (a + 0) / bpv : ""
            rq = (a != "" && bq != "") ? (a + 0) / bqv : ""
            pp = perc[k, "part-persistent"]
            rs = (a != "" && pp != "") ? sprintf("%.2f", (a + 0) / pp) : "–"
            printf "| %s %% | %s | %s | %s %s | %s | %s %s | %s | %s |\n", q[2], size_label(q[3]), num(a), \
                substr(bp, 6), num(bpv), cell(rp), bq, num(bqv), cell(rq), rs
        }
        printf "\nRatios above 1.05: %d of %d.\n\n", over, cells
        hdr = "| noise | size | 0.75·d |"; sep = "|---|---|---|"
        for (j = 1; j <= nm; j++) if (modes[j] != "single") { hdr = hdr " " modes[j] " |"; sep = sep "---|" }
        recv = 0
        for (i = 1; i <= nk; i++) {
            split(keys[i], q, SUBSEP)
            if (q[1] != "recv") continue
            if (!recv++) {
                print "Receive side, extra compute time in µs (median); ✓ where it reaches 0.75·d:\n"
                print hdr; print sep
            }
            k = keys[i]; line = sprintf("| %s %% | %s | %s |", q[2], size_label(q[3]), num(0.75 * delay[k]))
            for (j = 1; j <= nm; j++) {
                m = modes[j]
                if (m == "single") continue
                v = ((k, m) in extra) ? extra[k, m] : ""
                line = line " " (v == "" ? "–" : num(v) (v + 0 >= 0.75 * delay[k] ? " ✓" : "")) " |"
            }
            print line
        }
        if (recv) print ""
    }' "$1"
}

# Google Benchmark JSON (mpipcl-gbench --benchmark_out_format=json) -> Markdown: one row per
# benchmark with its counters. (JSON, not CSV: Google Benchmark's CSV writer aborts when the
# benchmarks of one run have different counters.) The writer puts one "key": value per line.
render_gbench() {  # $1 = json, $2 = meta
    awk -v metafile="$2" "$awk_csv"'
    function flush(    line) {
        if (name == "") return
        if (run_type == "aggregate") { name = ""; return }
        gsub(/\/manual_time|\/iterations:[0-9]+|\/min_time:[0-9.]+/, "", name)
        line = sprintf("| `%s` | %s | %s %s | %s |", name, iters, num(real), unit, counters)
        if (error != "") line = sprintf("| `%s` | | | error: %s |", name, error)
        rows[++nr] = line
        name = ""
    }
    /^ *"benchmarks": *\[/ { inside = 1; next }
    !inside { next }
    /^ *\{/ { name = ""; counters = ""; error = ""; run_type = ""; next }
    /^ *\}/ { flush(); next }
    /^ *"[A-Za-z_0-9]+": / {
        key = $0; sub(/^ *"/, "", key); sub(/".*/, "", key)
        val = $0; sub(/^ *"[A-Za-z_0-9]+": */, "", val); sub(/,$/, "", val)
        str = val ~ /^"/; gsub(/^"|"$/, "", val)
        if (key == "name") name = val
        else if (key == "run_type") run_type = val
        else if (key == "iterations") iters = val
        else if (key == "real_time") real = val
        else if (key == "time_unit") unit = val
        else if (key == "error_message") error = val
        else if (!str && key !~ /^(family_index|per_family_instance_index|repetitions|repetition_index|threads|cpu_time|bytes_per_second|items_per_second|error_occurred)$/)
            counters = counters (counters == "" ? "" : ", ") key " " num(val)
    }
    END {
        header(metafile, meta(metafile, "mpi"))
        print ""
        print "| benchmark | iterations | time per iteration | counters |"
        print "|---|---|---|---|"
        for (i = 1; i <= nr; i++) print rows[i]
        print ""
    }' "$1"
}

# mpipcl-bench --collective CSVs -> Markdown: per collective one table, size by mode, of the
# perceived time's median with its ratio to single and to multi, and the ideal ratio to single
# (CSVs that have it).
render_coll() {  # $1 = csv, $2 = meta
    awk -v metafile="$2" "$awk_csv"'
    # The head of a table of collective c: a row per size (a block for the block-wise ones,
    # docs/benchmarks.md "Collectives"), a column per mode, and @extra (one more column or "").
    function coll_head(c, extra,    line, rule, j) {
        line = c ~ /^(gather|allgather|alltoall|neighbor)$/ ? "| block |" : "| size |"
        rule = "|---|"
        for (j = 1; j <= nm[c]; j++) { line = line " " modes[c, j] " |"; rule = rule "---|" }
        if (extra != "") { line = line " " extra " |"; rule = rule "---|" }
        print line; print rule
    }
    $1 ~ /^collective,/ { n = csvsplit($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    $0 == "" { next }
    {
        csvsplit($0, f)
        c = f[col["collective"]]; mode = f[col["mode"]]; size = f[col["bytes"]] + 0
        if (!(c in seen_c)) { seen_c[c] = 1; colls[++nc] = c }
        if (!((c, mode) in seen_m)) { seen_m[c, mode] = 1; modes[c, ++nm[c]] = mode }
        if (!((c, size) in seen_s)) { seen_s[c, size] = 1; sizes[c, ++ns[c]] = size }
        k = c SUBSEP mode SUBSEP size
        perc[k] = f[col["perceived_us_median"]]
        rs[k] = f[col["ratio_to_single"]]; rm[k] = f[col["ratio_to_multi"]]
        if ("ideal_ratio_to_single" in col) ideal[c, size] = f[col["ideal_ratio_to_single"]]
        who = " (threads per contributing rank)"
        # Computing threads (--compute work or spin): what the exchange costs the compute too.
        if ("compute" in col && f[col["compute"]] != "" && f[col["compute"]] != "sleep") {
            who = sprintf(", %s compute thread(s) per contributing rank (--compute %s)", \
                f[col["threads"]], f[col["compute"]])
            slow[k] = f[col["compute_slowdown_median"]]; slowed[c] = 1
        }
        launches = ("launches" in col) ? sprintf(" in each of %s launches, medians across them", f[col["launches"]]) : ""
        params[c] = sprintf("%s ranks, %s partitions%s, compute %s ms, noise %s %%, %s iterations, %s repeat(s)%s", \
            f[col["ranks"]], f[col["partitions"]], who, f[col["compute_ms"]], f[col["noise_pct"]], \
            f[col["iterations"]], f[col["repeats"]], launches)
        library = f[col["mpi_library"]]; version = f[col["mpipcl_version"]]
    }
    END {
        header(metafile, library)
        printf "- mpipcl %s\n\n", version
        for (a = 1; a <= nc; a++) {
            c = colls[a]
            printf "%s: %s. Perceived time in µs, median (÷ single, ÷ multi):\n\n", c, params[c]
            coll_head(c, ((c, sizes[c, 1]) in ideal) ? "ideal ÷ single" : "")
            for (i = 1; i <= ns[c]; i++) {
                line = "| " size_label(sizes[c, i]) " |"
                for (j = 1; j <= nm[c]; j++) {
                    k = c SUBSEP modes[c, j] SUBSEP sizes[c, i]
                    if (!(k in perc)) { line = line " – |"; continue }
                    v = num(perc[k])
                    if (modes[c, j] != "single" && modes[c, j] != "multi")
                        v = v sprintf(" (%.2f, %.2f)", rs[k], rm[k])
                    line = line " " v " |"
                }
                if ((c, sizes[c, i]) in ideal) line = line sprintf(" %.2f |", ideal[c, sizes[c, i]])
                print line
            }
            print ""
            if (!(c in slowed)) continue
            print "Compute slowdown (the contributors'\'' compute phase ÷ the same compute without communication), median:\n"
            coll_head(c, "")
            for (i = 1; i <= ns[c]; i++) {
                line = "| " size_label(sizes[c, i]) " |"
                for (j = 1; j <= nm[c]; j++) {
                    k = c SUBSEP modes[c, j] SUBSEP sizes[c, i]
                    line = line ((k in slow) ? sprintf(" %.3f |", slow[k]) : " – |")
                }
                print line
            }
            print ""
        }
    }' "$1"
}

# Shared by the merges of several launches' CSVs: val[r, c, n] holds what launch n gave row r
# in column c, runs[r] how many launches gave row r.
# shellcheck disable=SC2016  # awk code, not shell
awk_launches='
function quote(v) { return v ~ /[",]/ ? "\"" escape_q(v) "\"" : v }
function escape_q(v,    out) { out = v; gsub(/"/, "\"\"", out); return out }
# The launch at rank @at when row r is sorted by column c as numbers (1 = least, 0 = most,
# -1 = the median, the lower middle for an even count).
function launch_at(r, c, at,    n, i, j, t) {
    n = runs[r]
    for (i = 1; i <= n; i++) ord[i] = i
    for (i = 2; i <= n; i++) {
        t = ord[i]
        for (j = i - 1; j >= 1 && val[r, c, ord[j]] + 0 > val[r, c, t] + 0; j--) ord[j + 1] = ord[j]
        ord[j + 1] = t
    }
    return ord[at > 0 ? at : at == 0 ? n : int((n + 1) / 2)]
}
'

# Several launches of one benchmark -> one CSV (mpipcl-bench --collective CSVs, one header or
# several): a row per configuration (every column but the measured ones), each measured column
# the median across the launches (the lower of the two middles for an even count), p10 and p90
# too, min the least and max the most; ratio_to_single and ratio_to_multi recomputed from those
# medians (single and multi of the same configuration), and a column launches. The launches of a
# 4-ranks-on-2-cores run differ more than the repeats inside one launch do.
merge_launches() {  # CSV...
    awk "$awk_csv$awk_launches"'
    function measured(name) { return name ~ /^(perceived_us_|ratio_to_|compute_slowdown_|cpu_ms$|ideal_ratio_)/ }
    # What the launches gave row r in column c at rank @at (see launch_at), as written.
    function pick(r, c, at) { return val[r, c, launch_at(r, c, at)] }
    /^[a-z_]+,/ && $0 ~ /(^|,)perceived_us_median(,|$)/ {
        if (nh == 0) { nh = csvsplit($0, h); hdr = $0; for (i = 1; i <= nh; i++) col[h[i]] = i }
        else if ($0 != hdr) { print "merge: the launches have different columns" > "/dev/stderr"; bad = 1; exit 1 }
        next
    }
    $0 == "" { next }
    {
        csvsplit($0, f)
        key = ""; group = ""
        for (i = 1; i <= nh; i++) {
            if (measured(h[i])) continue
            key = key SUBSEP f[i]
            if (h[i] != "mode") group = group SUBSEP f[i]
        }
        if (!(key in nrow)) { nrow[key] = ++nk; groupof[nk] = group; modeof[nk] = f[col["mode"]] }
        r = nrow[key]; n = ++runs[r]
        for (i = 1; i <= nh; i++) val[r, i, n] = f[i]
    }
    END {
        if (bad || nh == 0) exit 1
        for (r = 1; r <= nk; r++) {
            perc[r] = pick(r, col["perceived_us_median"], -1)
            if (modeof[r] == "single" || modeof[r] == "multi") base[groupof[r], modeof[r]] = perc[r]
        }
        print hdr ",launches"
        for (r = 1; r <= nk; r++) {
            line = ""
            for (i = 1; i <= nh; i++) {
                if (!measured(h[i])) v = quote(val[r, i, 1])
                else if (h[i] == "perceived_us_min") v = pick(r, i, 1)
                else if (h[i] == "perceived_us_max") v = pick(r, i, 0)
                else if (h[i] ~ /^ratio_to_/) {
                    b = groupof[r] SUBSEP substr(h[i], 10)
                    v = (b in base) && base[b] > 0 ? sprintf("%.4f", perc[r] / base[b]) : pick(r, i, -1)
                } else v = sprintf(h[i] ~ /^perceived/ ? "%.3f" : "%.4f", pick(r, i, -1))
                line = line (i > 1 ? "," : "") v
            }
            print line "," runs[r]
        }
    }' "$@"
}

# Several launches of mpipcl-stencil -> one CSV (merge-app above).
merge_app() {  # CSV...
    awk "$awk_csv$awk_launches"'
    /^variant,/ {
        if (nh == 0) { nh = csvsplit($0, h); hdr = $0; for (i = 1; i <= nh; i++) col[h[i]] = i }
        else if ($0 != hdr) { print "merge-app: the launches have different columns" > "/dev/stderr"; bad = 1; exit 1 }
        next
    }
    $0 == "" { next }
    {
        csvsplit($0, f)
        key = f[col["variant"]] SUBSEP f[col["ranks"]]
        if (!(key in nrow)) nrow[key] = ++nk
        r = nrow[key]; n = ++runs[r]
        for (i = 1; i <= nh; i++) val[r, i, n] = f[i]
    }
    END {
        if (bad || nh == 0) exit 1
        print hdr ",launches"
        t = col["time_per_iteration_s_median"]; lo = col["time_per_iteration_s_min"]
        hi = col["time_per_iteration_s_max"]
        for (r = 1; r <= nk; r++) {
            m = launch_at(r, t, -1)
            least = val[r, lo, launch_at(r, lo, 1)]; most = val[r, hi, launch_at(r, hi, 0)]
            line = ""
            for (i = 1; i <= nh; i++) {
                v = i == lo ? least : i == hi ? most : val[r, i, m]
                line = line (i > 1 ? "," : "") quote(v)
            }
            print line "," n
        }
    }' "$@"
}

# The compute table (compute-<mpi>-<setup>.csv: mpipcl-bench CSVs of several --compute kinds,
# concatenated under one header, from cmake/bench_compute.sh) -> Markdown: per kind and side,
# one row per size and mode with the perceived time (÷ multi), the compute slowdown and what
# each process and its progress thread cost per iteration.
render_compute() {  # $1 = csv, $2 = meta
    awk -v metafile="$2" "$awk_csv"'
    NR == 1 { n = csvsplit($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    $0 == "" || $1 ~ /^mode,/ { next }
    {
        csvsplit($0, f)
        kind = f[col["compute"]]; side = f[col["side"]]
        if (!((kind, side) in seen)) { seen[kind, side] = 1; groups[++ng] = kind SUBSEP side }
        k = kind SUBSEP side
        perceived = num(f[col["perceived_us_median"]])
        if (f[col["ratio_to_multi"]] != "") perceived = perceived sprintf(" (%.2f)", f[col["ratio_to_multi"]])
        slowdown = f[col["compute_slowdown_median"]]
        row[k, ++nr[k]] = sprintf("| %s | %s | %s | %s | %s | %s / %s / %s | %s / %s / %s |", \
            size_label(f[col["size_bytes"]] + 0), f[col["mode"]], perceived, \
            side == "recv" ? num(f[col["extra_compute_us_median"]]) : "–", \
            slowdown == "" ? "–" : sprintf("%.3f", slowdown), \
            num(f[col["send_cpu_ms"]]), num(f[col["send_progress_cpu_ms"]]), \
            wake(f[col["send_progress_wakeups"]]), \
            num(f[col["recv_cpu_ms"]]), num(f[col["recv_progress_cpu_ms"]]), \
            wake(f[col["recv_progress_wakeups"]]))
        library = f[col["mpi_library"]]; version = f[col["mpipcl_version"]]
        params = sprintf("%s partitions, %s compute thread(s) per rank, compute %s ms, " \
            "noise %s %%, %s iterations after %s warm-up, %s repeat(s)", \
            f[col["partitions"]], f[col["threads"]], f[col["compute_ms"]], f[col["noise_pct"]], \
            f[col["iterations"]], f[col["warmup"]], f[col["repeats"]])
    }
    function wake(v) { return (v == "" || v == "nan") ? "–" : sprintf("%.0f", v) }
    END {
        header(metafile, library)
        printf "- mpipcl %s; %s\n\n", version, params
        for (g = 1; g <= ng; g++) {
            split(groups[g], ks, SUBSEP)
            printf "`--compute %s`, %s side:\n\n", ks[1], ks[2]
            print "| size | mode | perceived µs (÷ multi) | extra compute µs | slowdown | sender CPU ms / progress ms / wake-ups | receiver CPU ms / progress ms / wake-ups |"
            print "|---|---|---|---|---|---|---|"
            for (i = 1; i <= nr[groups[g]]; i++) print row[groups[g], i]
            print ""
        }
    }' "$1"
}

# The application table (app-<mpi>-<setup>.csv: mpipcl-stencil CSVs of several rank counts,
# concatenated under one header, from cmake/bench_app.sh) -> Markdown: per rank count, one row
# per variant with the time per iteration (min..max over repeats), the halo time and the share
# of plain's halo time hidden.
render_app() {  # $1 = csv, $2 = meta
    awk -v metafile="$2" "$awk_csv"'
    NR == 1 { n = csvsplit($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
    $0 == "" || $1 ~ /^variant,/ { next }
    {
        csvsplit($0, f)
        ranks = f[col["ranks"]]
        if (!(ranks in seen)) { seen[ranks] = 1; groups[++ng] = ranks
            grid[ranks] = sprintf("%s×%s×%s cells, dims %s×%s×%s, %s threads per rank " \
                "(%s partitions per face), %s iterations after %s warm-up, %s repeats", \
                f[col["nx"]], f[col["ny"]], f[col["nz"]], f[col["dims_x"]], f[col["dims_y"]], \
                f[col["dims_z"]], f[col["threads"]], f[col["partitions_per_face"]], \
                f[col["iterations"]], f[col["warmup"]], f[col["repeats"]])
            if ("launches" in col && f[col["launches"]] > 1) grid[ranks] = grid[ranks] \
                sprintf("; each row is the launch with the median time of %s launches, the " \
                "range spans all of them", f[col["launches"]]) }
        halo = f[col["halo_s"]]; hidden = f[col["hidden_share"]]
        row[ranks, ++nr[ranks]] = sprintf("| %s | %.3f (%.3f .. %.3f) | %s | %s |", \
            f[col["variant"]], f[col["time_per_iteration_s_median"]] * 1e3, \
            f[col["time_per_iteration_s_min"]] * 1e3, f[col["time_per_iteration_s_max"]] * 1e3, \
            halo == "" ? "–" : sprintf("%.3f", halo * 1e3), \
            (hidden == "" || hidden == "nan") ? "–" : sprintf("%.0f %%", hidden * 100))
        library = f[col["mpi_library"]]; version = f[col["mpipcl_version"]]
    }
    END {
        header(metafile, library)
        printf "- mpipcl %s\n\n", version
        for (g = 1; g <= ng; g++) {
            r = groups[g]
            printf "%s ranks: %s.\n\n", r, grid[r]
            print "| variant | ms per iteration (min .. max) | halo ms | halo hidden |"
            print "|---|---|---|---|"
            for (i = 1; i <= nr[r]; i++) print row[r, i]
            print ""
        }
    }' "$1"
}

render() {
    local name csv
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    for csv in "$results"/*.csv "$results"/*.json; do
        [ -e "$csv" ] || continue
        name=$(basename "$csv"); name=${name%.*}
        [ -f "$results/$name.meta" ] || { echo "no $name.meta beside $csv" >&2; return 1; }
        case "$name" in
            sweep-*) render_sweep "$csv" "$results/$name.meta" >"$tmp/$name.md" ;;
            auto-*) render_auto "$csv" "$results/$name.meta" >"$tmp/$name.md" ;;
            gbench-*) render_gbench "$csv" "$results/$name.meta" >"$tmp/$name.md" ;;
            coll-*) render_coll "$csv" "$results/$name.meta" >"$tmp/$name.md" ;;
            compute-* | progress-*) render_compute "$csv" "$results/$name.meta" >"$tmp/$name.md" ;;
            app-*) render_app "$csv" "$results/$name.meta" >"$tmp/$name.md" ;;
            *) echo "unknown result kind: $name (sweep-*, auto-*, coll-*, compute-*, progress-*, app-* or gbench-*)" >&2
               return 1 ;;
        esac
    done
    awk -v dir="$tmp" '
        /^<!-- BEGIN results [a-z0-9_-]+ -->$/ {
            print; name = $4; file = dir "/" name ".md"; skipping = 1
            if ((getline line < file) > 0) { print ""; print line; while ((getline line < file) > 0) print line; close(file) }
            else print "\n(no results recorded yet: docs/results/" name ".csv)\n"
            next
        }
        /^<!-- END results / { skipping = 0 }
        !skipping { print }
    ' "$doc" >"$tmp/doc.md"
    cat "$tmp/doc.md" >"$doc"
}

record() {  # NAME CSV COMMAND...
    local name=$1 csv=$2
    shift 2
    local machine=${MPIPCL_MACHINE:-}
    if [ -z "$machine" ]; then
        machine="$(nproc)-core $(uname -m), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    fi
    local commit mpi=""
    commit=${MPIPCL_COMMIT:-$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)}
    mkdir -p "$results"
    case "$name" in
        gbench-*) cp "$csv" "$results/$name.json" ;;
        *) cp "$csv" "$results/$name.csv" ;;
    esac
    if [ -n "${MPIPCL_MPI:-}" ]; then mpi=$MPIPCL_MPI; fi
    {
        echo "date: $(date -u +%F)"
        echo "commit: $commit"
        echo "machine: $machine"
        [ -z "$mpi" ] || echo "mpi: $mpi"
        echo "command: $*"
    } >"$results/$name.meta"
    render
}

case "${1:-}" in
    record)
        [ $# -ge 4 ] || { echo "usage: $0 record NAME FILE COMMAND..." >&2; exit 2; }
        shift
        record "$@"
        ;;
    render) render ;;
    merge)
        [ $# -ge 2 ] || { echo "usage: $0 merge CSV..." >&2; exit 2; }
        shift
        merge_launches "$@"
        ;;
    show-auto)
        [ $# -eq 2 ] || { echo "usage: $0 show-auto CSV" >&2; exit 2; }
        render_auto "$2" /dev/null | tail -n +5
        ;;
    show-compute)
        [ $# -eq 2 ] || { echo "usage: $0 show-compute CSV" >&2; exit 2; }
        render_compute "$2" /dev/null | tail -n +5
        ;;
    merge-app)
        [ $# -ge 2 ] || { echo "usage: $0 merge-app CSV..." >&2; exit 2; }
        shift
        merge_app "$@"
        ;;
    show-app)
        [ $# -eq 2 ] || { echo "usage: $0 show-app CSV" >&2; exit 2; }
        render_app "$2" /dev/null | tail -n +5
        ;;
    *) echo "usage: $0 record NAME FILE COMMAND... | render | merge CSV... | merge-app CSV... | show-auto CSV | show-compute CSV | show-app CSV" >&2
       exit 2 ;;
esac
