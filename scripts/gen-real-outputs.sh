#!/usr/bin/env bash
# gen-real-outputs.sh — the real-outputs set (issue 38): outputs of real programs run on real
# code, with faults planted in it and without, and the lines a developer needs from each.
# Writes testdata/real-outputs/NAME.{out,cmd,keep}; see testdata/real-outputs/README.md.
#
# The code is real: Go modules from the Go module proxy (their own tests), CPython's standard
# library and its own unittest suite, npm packages (tests written against the unmutated
# package's answers), the JDK's own sources (src.zip), the C files of Go's runtime/cgo, the
# shell scripts of this machine, and this repository's own history. Faults are planted by
# small mutations of that code (a comparison flipped, a constant changed, a line broken);
# a run with no mutation is the no-fault case.
#
# The .keep lines are chosen by scripts/markkeep from the output's format alone (which lines
# name a failure, say why, point at the failing frame, count the result; and on a run that
# failed nothing, its structure: first line, group headers, summary), rules written before
# any cut was looked at; see scripts/markkeep/main.go.
#
#   scripts/gen-real-outputs.sh              every case
#   scripts/gen-real-outputs.sh go python    only the named groups (go python node js c java
#                                            rust shell pkg git files net)
#
# Needs go, git, perl, python3 (with its test package), curl. Installs with apt-get what a
# group needs (shellcheck, nodejs, npm, gcc, make, default-jdk-headless, cargo) and npm
# packages (semver, qs, minimist, ms, jest, mocha, eslint, typescript) into its work tree,
# and skips a group whose tool cannot be had. Re-runnable: the work tree
# ($REAL_OUTPUTS_WORK, default /tmp/ctxkit-real) is wiped first and every output rewritten;
# durations, dates, ports and addresses are rewritten to fixed values.
set -euo pipefail

export LC_ALL=C TZ=UTC LANG=C COLUMNS=80
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 GONOSUMDB='*' GOFLAGS=-mod=mod
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
export RUST_BACKTRACE=0 CARGO_TERM_PROGRESS_WHEN=never
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export NO_COLOR=1 FORCE_COLOR=0 npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/testdata/real-outputs
WORK=${REAL_OUTPUTS_WORK:-/tmp/ctxkit-real}
ONLY=" $* "

rm -rf "$WORK"
mkdir -p "$WORK/.raw" "$OUT"
(cd "$ROOT" && go build -o "$WORK/.markkeep" ./scripts/markkeep)

log() { echo "gen-real-outputs: $*" >&2; }
want() { [[ "$ONLY" == "  " || "$ONLY" == *" $1 "* ]]; }

# have CMD [DEBIAN-PACKAGE]
source "$(dirname "${BASH_SOURCE[0]}")/have.sh"

# Run-dependent bits: durations of go, python, node, jest, mocha, cargo; dates; ports.
SCRUB='s/\((\d+\.\d+)s\)/(0.00s)/g; s/\t\d+\.\d+s$/\t0.005s/; s/ in \d+\.\d+s\b/ in 0.010s/g;
s/\b\d+(\.\d+)? ?ms\b(?=\)|$)/12ms/g; s/duration_ms: [\d.]+/duration_ms: 1.5/g;
s/(Time:\s+)[\d.]+ s/${1}1.0 s/; s/\b0x[0-9a-f]{6,}\b/0xc000012345/g; s/goroutine \d+/goroutine 7/g;
s/\b(Date|Last-Modified): .*/$1: Sun, 29 Nov 2026 04:00:00 GMT/; s/127\.0\.0\.1:\d+/127.0.0.1:8000/g;
s/port \d+/port 8000/g; s/\(\d+\.\d+ secs\)/(0.01 secs)/g; s/finished in [\d.]+s/finished in 0.01s/;'

# record NAME FORMAT DIR CMDLINE ARGV...: run ARGV in DIR, stdout and stderr into one file in
# the order written; CMDLINE is what NAME.cmd shows; FORMAT tells markkeep how to read it.
# The exit status is the point, not a stop.
record() {
	local name=$1 format=$2 dir=$3 cmdline=$4
	shift 4
	(cd "$dir" && "$@") >"$WORK/.raw/$name" 2>&1 </dev/null || true
	perl -pe "$SCRUB" "$WORK/.raw/$name" >"$OUT/$name.out"
	local size
	size=$(wc -c <"$OUT/$name.out")
	if ((size < 4000)); then
		# too short to be worth a cut at --cap 2000
		log "drop $name: $size bytes"
		rm -f "$OUT/$name.out"
		return 0
	fi
	if ((size > 64000)); then
		log "drop $name: $size bytes, over the set's per-case budget"
		rm -f "$OUT/$name.out"
		return 0
	fi
	printf '%s\n' "$cmdline" >"$OUT/$name.cmd"
	"$WORK/.markkeep" "$format" <"$OUT/$name.out" >"$OUT/$name.keep"
	log "$name: $size bytes, $(wc -l <"$OUT/$name.keep") keep lines ($format)"
}

# mut FILE N PERL-PATTERN REPLACEMENT: the fault, planted on the Nth line matching the pattern.
mut() {
	local f=$1 n=$2 pat=$3 rep=$4
	chmod u+w "$f"
	N=$n PAT=$pat REP=$rep perl -pi -e 'if (/$ENV{PAT}/ && ++$c == $ENV{N}) { s/$ENV{PAT}/$ENV{REP}/ }' "$f"
}

# ---- Go: real modules, their own tests ------------------------------------------------------
# gocopy DIR MODULE@VERSION: the module's source, writable, with a go.mod and its test deps.
gocopy() {
	local d=$1 mv=$2 mod=${2%@*}
	rm -rf "$d"
	mkdir -p "$(dirname "$d")"
	local src
	src=$(cd "$WORK" && GOFLAGS=-mod=mod go mod download -json "$mv" 2>/dev/null | perl -ne 'print $1 if /"Dir": "(.*)"/')
	[[ -n "$src" && -d "$src" ]] || return 1
	cp -r "$src" "$d"
	chmod -R u+w "$d"
	[[ -f "$d/go.mod" ]] || printf 'module %s\n\ngo 1.16\n' "$mod" >"$d/go.mod"
	(cd "$d" && go mod tidy >/dev/null 2>&1 || true)
}

# Faults are found, not hand-placed: the candidates are every line of the code under test
# where one small mutation applies (a comparison flipped or widened, a constant moved by
# one, a boolean returned the other way), in an order fixed by a hash of file, line and
# mutation; each is tried in turn and kept when the tests then fail, but not everywhere
# (at most MAXFAIL failing tests, so the run reads as one fault, not a broken package).
MUTATIONS=(' < | <= ' ' > | >= ' ' == | != ' ' != | == ' '\+ 1\b|+ 2' '- 1\b|- 2' 'return true|return false' 'return false|return true' ' && | || ')

# candidates DIR FILES...: "file|line|pattern|replacement" for every line of FILES (relative
# to DIR) a mutation applies to, in the fixed order.
candidates() {
	local d=$1
	shift
	(cd "$d" && MUTS=$(printf '%s\n' "${MUTATIONS[@]}") perl -MDigest::MD5=md5_hex -e '
		my @m = map { [split /\|/, $_, 2] } grep { length } split /\n/, $ENV{MUTS};
		my @c;
		for my $f (@ARGV) {
			open my $h, "<", $f or next;
			while (my $l = <$h>) {
				next if $l =~ m{^\s*(//|#)};
				for my $m (@m) { push @c, "$f|$.|$m->[0]|$m->[1]" if $l =~ /$m->[0]/ }
			}
		}
		print "$_\n" for sort { md5_hex($a) cmp md5_hex($b) } @c;' "$@")
}

# plant DIR "file|line|pattern|replacement": the mutation, on that line only.
plant() {
	local d=$1 f n pat rep
	IFS='|' read -r f n pat rep <<<"$2"
	chmod u+w "$d/$f"
	N=$n PAT=$pat REP=$rep perl -pi -e 's/$ENV{PAT}/$ENV{REP}/ if $. == $ENV{N}' "$d/$f"
}

# search DIR WANT TRIES MAXFAIL RECORDER CHECK-CMD -- FILES...: tries candidates of FILES
# (restoring each file after) until WANT of them make CHECK-CMD (run in DIR) report between
# 1 and MAXFAIL failures, counted as lines matching $FAILRE in its output; for each, plants
# it again and calls RECORDER with its number.
search() {
	local d=$1 want=$2 tries=$3 maxfail=$4 recorder=$5 check=$6
	shift 7
	local c f found=0 n=0 fails
	while IFS= read -r c; do
		((n++ < tries)) || break
		f=${c%%|*}
		cp "$d/$f" "$WORK/.pristine"
		plant "$d" "$c"
		fails=$( (cd "$d" && timeout 60 sh -c "$check") 2>&1 </dev/null | grep -cE "$FAILRE" || true)
		if ((fails >= 1 && fails <= maxfail)); then
			found=$((found + 1))
			log "fault $found: $c ($fails failures)"
			"$recorder" "$found"
		fi
		cp "$WORK/.pristine" "$d/$f"
		((found < want)) || break
	done < <(candidates "$d" "$@")
	((found > 0)) || log "no fault found in $d"
}

# gomodule SHORT MODULE@VERSION PKGS: the cases of one module: go test PKGS, with -v and
# without, with no fault and with each of three faults found in its non-test code.
gomodule() {
	local short=$1 mv=$2 pkgs=$3
	GO_D=$WORK/go/$short GO_SHORT=$short GO_PKGS=$pkgs
	gocopy "$GO_D" "$mv" || { log "skip go $short: cannot get $mv"; return 0; }
	gorecord ok
	local files
	files=$(cd "$GO_D" && for p in $pkgs; do ls "${p%/...}"/*.go; done 2>/dev/null | grep -v '_test\.go$' | grep -v -e table -e tables -e gen_ | sed 's|^\./||' | sort -u)
	FAILRE='^\s*--- FAIL|^panic: ' search "$GO_D" 3 15 12 gofault "go test -count=1 $pkgs" -- $files
}
gofault() { gorecord "f$1"; }
gorecord() {
	record "go-test-$GO_SHORT-$1" gotest "$GO_D" "go test $GO_PKGS" go test -count=1 $GO_PKGS
	record "go-test-v-$GO_SHORT-$1" gotest "$GO_D" "go test -v $GO_PKGS" go test -count=1 -v $GO_PKGS
}

group_go() {
	gomodule humanize github.com/dustin/go-humanize@v1.0.1 ./...
	gomodule uuid github.com/google/uuid@v1.6.0 ./...
	gomodule toml github.com/BurntSushi/toml@v1.6.0 .
	gomodule yaml3 gopkg.in/yaml.v3@v3.0.1 .
	gomodule semver github.com/blang/semver@v3.5.1+incompatible ./...
	gomodule jsonparser github.com/buger/jsonparser@v1.1.2 ./...
	gomodule runewidth github.com/mattn/go-runewidth@v0.0.19 ./...
	gomodule gjson github.com/tidwall/gjson@v1.20.1 ./...
	gomodule spew github.com/davecgh/go-spew@v1.1.1 ./spew
	gomodule gotoml github.com/pelletier/go-toml@v1.9.5 .
	gomodule kong github.com/alecthomas/kong@v1.17.0 .
	gomodule uniseg github.com/rivo/uniseg@v0.4.7 .
	# go vet and go build: a Printf verb, a copied lock, an unused variable, a type mismatch
	local d=$WORK/go/vet
	gocopy "$d" github.com/dustin/go-humanize@v1.0.1
	record go-vet-humanize-ok diag "$d" "go vet ./..." go vet ./...
	mut "$d/comma.go" 1 'return ' 'fmt.Printf("%d\n", "comma"); return '
	perl -0pi -e 's/import \(/import (\n\t"fmt"/' "$d/comma.go"
	mut "$d/bytes.go" 1 'return fmt.Sprintf\(' 'return fmt.Sprintf("%s %d", '
	record go-vet-humanize-f1 diag "$d" "go vet ./..." go vet ./...
	gocopy "$d" github.com/BurntSushi/toml@v1.6.0
	record go-vet-toml-ok diag "$d" "go vet ./..." go vet ./...
	mut "$d/encode.go" 2 'return nil$' 'var unused int; return nil'
	mut "$d/lex.go" 1 'return r$' 'return "r"'
	record go-build-toml-f1 diag "$d" "go build ./..." go build ./...
	gocopy "$d" gopkg.in/yaml.v3@v3.0.1
	mut "$d/decode.go" 3 'return true$' 'return 1'
	mut "$d/yaml.go" 2 'return nil$' 'return nil, nil'
	record go-build-yaml3-f1 diag "$d" "go vet ./..." go vet ./...
}

# ---- Python: the standard library and its own test suite ------------------------------------
# pymodule SHORT MODULE TEST: python3 -m unittest test.TEST, with MODULE's source shadowed by
# a copy (the suite imports it by name), with no fault and with each of three faults found
# in it (see search).
pymodule() {
	local short=$1 module=$2 test=$3 src base files
	PY_LIB=$WORK/py/$short PY_SHORT=$short PY_TEST=$test
	src=$(python3 -c "import $module, os; f = $module.__file__; print(os.path.dirname(f) if f.endswith('__init__.py') else f)")
	rm -rf "$PY_LIB" && mkdir -p "$PY_LIB"
	cp -r "$src" "$PY_LIB/"
	chmod -R u+w "$PY_LIB"
	base=$(basename "$src")
	export PYTHONPATH=$PY_LIB
	pyrecord ok
	files=$(cd "$PY_LIB" && find "$base" -name '*.py' | sort)
	FAILRE='^(FAIL|ERROR): ' search "$PY_LIB" 3 20 10 pyfault "python3 -m unittest test.$test" -- $files
	unset PYTHONPATH
}
pyfault() { pyrecord "f$1"; }
pyrecord() {
	record "py-unittest-v-$PY_SHORT-$1" unittest "$PY_LIB" "python3 -m unittest -v test.$PY_TEST" python3 -m unittest -v "test.$PY_TEST"
	[[ $1 == ok ]] || record "py-unittest-$PY_SHORT-$1" unittest "$PY_LIB" "python3 -m unittest test.$PY_TEST" python3 -m unittest "test.$PY_TEST"
}

group_python() {
	python3 -c 'import test.support' 2>/dev/null || { log "skip python: no test package"; return 0; }
	pymodule textwrap textwrap test_textwrap
	pymodule statistics statistics test_statistics
	pymodule fractions fractions test_fractions
	pymodule difflib difflib test_difflib
	pymodule shlex shlex test_shlex
	pymodule json json test_json
	pymodule calendar calendar test_calendar
	pymodule ipaddress ipaddress test_ipaddress
	pymodule configparser configparser test_configparser
	pymodule colorsys colorsys test_colorsys
	pymodule heapq heapq test_heapq
	pymodule string string test_string
	pymodule urlparse urllib test_urlparse
	# tracebacks of programs that use the library: a chained error, a deep recursion, a bad file
	local d=$WORK/py/prog
	mkdir -p "$d"
	python3 - "$d" <<'PY'
import json, random, sys, os
d = sys.argv[1]
random.seed(7)
rows = [{"id": i, "sku": "sku-%04d" % i, "qty": random.randint(1, 40), "price": round(random.random() * 90, 2)} for i in range(900)]
text = json.dumps(rows, indent=1)
open(os.path.join(d, "orders.json"), "w").write(text)
i = text.index('"sku-0613"')
open(os.path.join(d, "orders-bad.json"), "w").write(text[:i] + text[i + 1:])
PY
	cat >"$d/report.py" <<'PY'
"""Totals of an order file, logging each order as it goes."""
import json, logging, sys, statistics
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stdout)
log = logging.getLogger("report")

class ReportError(Exception):
    pass

def load(path):
    with open(path) as f:
        return json.load(f)

def total(rows, currency):
    out = 0.0
    for r in rows:
        log.info("order %d %s qty=%d price=%.2f", r["id"], r["sku"], r["qty"], r["price"])
    for r in rows:
        out += r["qty"] * r["price"] * RATES[currency]
    return out

RATES = {"EUR": 1.0, "USD": 1.08}

def main(paths, currency):
    for path in paths:
        try:
            rows = load(path)
        except json.JSONDecodeError as e:
            raise ReportError("cannot read %s" % path) from e
        log.info("%s: median qty %s", path, statistics.median(r["qty"] for r in rows))
        print("total %.2f %s" % (total(rows, currency), currency))

if __name__ == "__main__":
    main(sys.argv[1:-1], sys.argv[-1])
PY
	record py-traceback-json python "$d" "python3 report.py orders.json orders-bad.json EUR" python3 report.py orders.json orders-bad.json EUR
	record py-traceback-keyerror python "$d" "python3 report.py orders.json GBP" python3 report.py orders.json GBP
	record py-run-ok python "$d" "python3 report.py orders.json USD" python3 report.py orders.json USD
	record py-traceback-missing python "$d" "python3 report.py orders.json orders-missing.json EUR" python3 report.py orders.json orders-missing.json EUR
	python3 -c 'import sys; sys.setrecursionlimit(200); import json; d = {}; cur = d
for i in range(300): cur["k"] = {}; cur = cur["k"]
print(json.dumps(d, indent=1))' >"$d/deep.json" 2>&1 || true
	record py-traceback-recursion python "$d" "python3 -c 'import json,sys; sys.setrecursionlimit(250); json.load(open(\"deep.json\"))'" python3 -c 'import json,sys; sys.setrecursionlimit(250); json.load(open("deep.json"))'
}

# ---- JavaScript: npm packages, node --test, jest, mocha, eslint, tsc -------------------------
# The tests of a package are written here against the answers the unmutated package gives
# (each call's result recorded first), so they pass on it and fail where a mutation bites.
JSCALLS=$(cat <<'JS'
module.exports = {
  semver: [
    ["valid", ["1.2.3"]], ["valid", ["v1.2"]], ["clean", ["  =v1.2.3  "]], ["inc", ["1.2.3", "minor"]],
    ["inc", ["1.2.3-beta.1", "prerelease"]], ["inc", ["1.2.3", "major"]], ["gt", ["1.2.3", "1.2.4"]],
    ["lt", ["1.10.0", "1.9.0"]], ["satisfies", ["1.2.3", "^1.0.0"]], ["satisfies", ["2.0.0", "^1.0.0"]],
    ["satisfies", ["1.2.3-rc.1", ">=1.2.0"]], ["maxSatisfying", [["1.2.3", "1.2.4", "1.3.0"], "~1.2.0"]],
    ["minVersion", [">=1.4.0 <2"]], ["coerce", ["v2.4"]], ["compare", ["1.0.0", "1.0.0-alpha"]],
    ["diff", ["1.2.3", "1.3.0"]], ["major", ["4.5.6"]], ["minor", ["4.5.6"]], ["patch", ["4.5.6"]],
    ["prerelease", ["1.2.3-alpha.4"]], ["validRange", ["1.x || >=2.5.0"]], ["sort", [["1.10.0", "1.2.0", "1.9.9"]]],
    ["rsort", [["1.10.0", "1.2.0", "1.9.9"]]], ["intersects", [">=1.0.0", "<0.9.0"]], ["outside", ["3.0.0", "^2.0.0", ">"]],
  ],
  qs: [
    ["parse", ["a=1&b=2"]], ["parse", ["a[b][c]=d"]], ["parse", ["a[]=1&a[]=2"]], ["parse", ["a=%20b%21"]],
    ["parse", ["a.b=c", { allowDots: true }]], ["parse", ["a[1]=b&a[0]=c"]], ["parse", ["?x=1", { ignoreQueryPrefix: true }]],
    ["stringify", [{ a: "b c" }]], ["stringify", [{ a: ["x", "y"] }]], ["stringify", [{ a: { b: { c: 1 } } }]],
    ["stringify", [{ a: ["x", "y"] }, { arrayFormat: "brackets" }]], ["stringify", [{ a: null, b: undefined }]],
    ["stringify", [{ a: "ä€" }]], ["parse", ["a=b;c=d", { delimiter: ";" }]], ["parse", ["a[b]=1&a[c]=2&a[b]=3"]],
  ],
  minimist: [
    ["", [["-x", "3", "-y", "4", "-n5", "-abc", "--beep=boop", "foo", "bar", "baz"]]],
    ["", [["--no-color", "--name", "x"]]], ["", [["-v", "-v", "--", "-x"]]], ["", [["--num", "0x10", "--f", "1e3"]]],
    ["", [["-abc", "hello"]]], ["", [["--a.b", "1", "--a.c", "2"]]], ["", [["--bool"], { boolean: ["bool"] }]],
    ["", [["-s", "5"], { string: ["s"] }]], ["", [["--x", "1", "--x", "2"]]], ["", [["-h"], { alias: { h: "help" } }]],
  ],
  ms: [
    ["", ["2 days"]], ["", ["1d"]], ["", ["10h"]], ["", ["2.5 hrs"]], ["", ["1m"]], ["", ["5s"]], ["", ["100"]],
    ["", ["-3 days"]], ["", [60000]], ["", [2 * 60000]], ["", [-3 * 60000]], ["", [ms => 1, { long: true }]],
    ["", [3600000, { long: true }]], ["", [86400000 * 3, { long: true }]], ["", ["1y"]], ["", ["1w"]],
  ],
};
JS
)

# jsproject DIR: the npm packages the JavaScript cases test, and the test runners.
jsproject() {
	local d=$1
	mkdir -p "$d"
	(cd "$d" && printf '{"name":"realjs","version":"1.0.0","private":true}\n' >package.json &&
		npm install --no-save --loglevel=error semver@7.6.3 qs@6.13.0 minimist@1.2.8 ms@2.1.3 jest@29.7.0 mocha@10.7.3 eslint@8.57.1 typescript@5.6.3 >/dev/null 2>&1)
	printf '%s\n' "$JSCALLS" >"$d/calls.js"
	# expected answers from the packages as installed
	(cd "$d" && node -e '
const calls = require("./calls.js"); const out = {};
for (const [pkg, list] of Object.entries(calls)) {
  const m = require(pkg);
  out[pkg] = list.map(([fn, args]) => { try { return JSON.stringify((fn ? m[fn] : m)(...args)) ?? "undefined" } catch (e) { return "throws " + e.message } });
}
require("fs").writeFileSync("expected.json", JSON.stringify(out, null, 1));')
}

# jstests DIR STYLE: one test file per package in STYLE (node, jest, mocha), one test per call.
jstests() {
	local d=$1 style=$2
	rm -rf "$d/test" && mkdir -p "$d/test"
	(cd "$d" && STYLE=$style node -e '
const calls = require("./calls.js"); const exp = require("./expected.json"); const fs = require("fs");
const style = process.env.STYLE;
for (const [pkg, list] of Object.entries(calls)) {
  let s = "";
  if (style === "node") s += "const test = require(\"node:test\");\nconst { describe } = test;\n";
  s += "const assert = require(\"node:assert\");\nconst m = require(\"" + pkg + "\");\n";
  s += "const run = (fn, args) => { try { return JSON.stringify((fn ? m[fn] : m)(...args)) ?? \"undefined\" } catch (e) { return \"throws \" + e.message } };\n\n";
  s += "describe(\"" + pkg + "\", () => {\n";
  list.forEach(([fn, args], i) => {
    const name = (fn || pkg) + "(" + JSON.stringify(args).slice(1, -1).replace(/x => 1/, "") + ")";
    const body = "  const got = run(" + JSON.stringify(fn) + ", " + (pkg === "ms" && i === 11 ? "[60000, { long: true }]" : JSON.stringify(args)) + ");\n";
    const want = JSON.stringify(exp[pkg][i]);
    const check = style === "jest" ? "    expect(got).toEqual(" + want + ");\n" : "    assert.strictEqual(got, " + want + ");\n";
    s += "  " + (style === "node" ? "test" : "it") + "(" + JSON.stringify(name) + ", () => {\n  " + body + check + "  });\n";
  });
  s += "});\n";
  fs.writeFileSync("test/" + pkg + ".test.js", s);
}')
}

JS_D=$WORK/js
jsfault() { jsrecord "f$1"; }
jsrecord() {
	local d=$JS_D v=$1
	jstests "$d" node
	record "node-test-$v" nodetest "$d" "node --test test/" node --test test/
	record "node-test-spec-$v" nodetest "$d" "node --test --test-reporter=spec test/" node --test --test-reporter=spec test/
	jstests "$d" jest
	record "jest-$v" jest "$d" "npx jest --verbose" npx jest --verbose
	record "jest-quiet-$v" jest "$d" "npx jest" npx jest
	jstests "$d" mocha
	record "mocha-$v" mocha "$d" "npx mocha test/" npx mocha test/
	jstests "$d" node
}

group_js() {
	have node nodejs && have npm npm || { log "skip js: no node/npm"; return 0; }
	local d=$WORK/js
	jsproject "$d"
	[[ -f "$d/expected.json" ]] || { log "skip js: npm install failed"; return 0; }
	jsrecord ok
	local files
	files=$(cd "$d" && ls node_modules/semver/classes/*.js node_modules/semver/functions/*.js node_modules/semver/ranges/*.js node_modules/qs/lib/*.js node_modules/ms/index.js node_modules/minimist/index.js)
	FAILRE='^not ok' search "$d" 4 40 8 jsfault "node --test test/" -- $files
	# npm's own errors
	record npm-install-e404 npm "$d" "npm install left-pad-ctxkit-missing-zz" npm install --loglevel=http left-pad-ctxkit-missing-zz
	record npm-install-ok npm "$d" "npm install --loglevel=http chalk@4.1.2" npm install --no-save --loglevel=http chalk@4.1.2 supports-color@7.2.0
	record npm-run-missing npm "$d" "npm run build --loglevel=verbose" npm run build --loglevel=verbose
	record npm-ls npm "$d" "npm ls --all" npm ls --all
}

# ---- lint: eslint and tsc on the npm packages' own sources -----------------------------------
group_lint() {
	have node nodejs && have npm npm || { log "skip lint: no node/npm"; return 0; }
	local d=$WORK/js
	[[ -f "$d/expected.json" ]] || jsproject "$d"
	# eslint and tsc on the packages' own source, and on a copy with planted errors
	# the recommended rules and a few of style, as projects add them: warnings by the
	# hundred in real code, among which the planted errors
	printf '{"root":true,"extends":"eslint:recommended","env":{"node":true,"es2022":true},"parserOptions":{"ecmaVersion":2022},"rules":{"no-var":"warn","prefer-const":"warn","eqeqeq":"warn","no-param-reassign":"warn","prefer-template":"warn","object-shorthand":"warn","curly":"warn","no-plusplus":"warn"}}\n' >"$d/.eslintrc.json"
	mkdir -p "$d/src" && cp -r "$d/node_modules/semver/classes" "$d/node_modules/semver/functions" "$d/node_modules/semver/ranges" "$d/src/"
	cp "$d/node_modules/qs/lib/"*.js "$d/src/"
	record eslint-ok eslint "$d" "npx eslint src/" npx eslint src/
	mut "$d/src/classes/range.js" 3 'const ' 'cnst '
	mut "$d/src/functions/inc.js" 1 'return ' 'retrn = undefinedThing; return '
	mut "$d/src/utils.js" 2 'var ' 'var i = 0; var '
	record eslint-f1 eslint "$d" "npx eslint src/" npx eslint src/
	record eslint-unix-f1 diag "$d" "npx eslint --format unix src/" npx eslint --format unix src/
	cp -r "$d/node_modules/semver/classes" "$d/node_modules/semver/functions" "$d/node_modules/semver/ranges" "$d/src/"
	printf '{"compilerOptions":{"allowJs":true,"checkJs":true,"noEmit":true,"strict":false,"target":"es2022","module":"commonjs","types":[]},"include":["src"]}\n' >"$d/tsconfig.json"
	rm -f "$d/src/"{utils,parse,stringify,formats,index}.js
	record tsc-checkjs tsc "$d" "npx tsc -p ." npx tsc -p .
	mkdir -p "$d/ts" && for f in "$d"/src/classes/*.js; do b=$(basename "$f" .js); sed 's/require(/require(/' "$f" >"$d/ts/$b.ts"; done
	printf '{"compilerOptions":{"noEmit":true,"strict":true,"target":"es2022","module":"commonjs","types":[]},"include":["ts"]}\n' >"$d/tsconfig.json"
	record tsc-strict tsc "$d" "npx tsc -p . --pretty false" npx tsc -p . --pretty false
}

# ---- C: the example programs Debian ships with zlib, liblzma, libpng and nettle, built by make ----
group_c() {
	have gcc gcc && have make make || { log "skip c: no gcc/make"; return 0; }
	local p
	for p in zlib1g-dev liblzma-dev libpng-dev nettle-dev; do
		[[ -d /usr/share/doc/$p/examples ]] || have /nonexistent "$p" || true
	done
	local d=$WORK/c f i
	rm -rf "$d" && mkdir -p "$d/src"
	for p in zlib1g-dev liblzma-dev libpng-dev nettle-dev; do
		cp /usr/share/doc/$p/examples/*.[ch] "$d/src/" 2>/dev/null || true
	done
	# (gunzip what Debian compressed)
	for f in /usr/share/doc/{zlib1g-dev,liblzma-dev,libpng-dev,nettle-dev}/examples/*.[ch].gz; do
		[[ -f $f ]] && gunzip -c "$f" >"$d/src/$(basename "$f" .gz)"
	done
	chmod -R u+w "$d"
	ls "$d"/src/*.c >/dev/null 2>&1 || { log "skip c: no example sources"; return 0; }
	cat >"$d/Makefile" <<'MK'
CFLAGS = -O2 -Wall -Wextra -Isrc
SRCS = $(sort $(wildcard src/*.c))
OBJS = $(SRCS:.c=.o)
all: $(OBJS)
	@echo "built $(words $(OBJS)) objects"
%.o: %.c
	$(CC) $(CFLAGS) -c -o $@ $<
clean:
	rm -f src/*.o
MK
	local strict='CFLAGS=-O2 -Wall -Wextra -Wconversion -Wsign-conversion -Wshadow -Isrc'
	record make-c-ok make "$d" "make -k" make -k
	make -C "$d" clean >/dev/null 2>&1
	record make-c-strict-ok make "$d" "make -k $strict" make -k "$strict"
	make -C "$d" clean >/dev/null 2>&1
	# faults: a statement's semicolon lost, a function misspelt, an undeclared name
	local files
	files=$(cd "$d" && ls src/*.c | awk 'NR % 4 == 2')
	i=0
	for f in $files; do
		i=$((i + 1))
		case $((i % 3)) in
		1) mut "$d/$f" 40 ';$' '' ;;
		2) mut "$d/$f" 2 '\b(\w+)\(' '${1}_x(' ;;
		0) mut "$d/$f" 12 '\b([a-z_]+)\b;$' '${1}_count;' ;;
		esac
	done
	record make-c-f1 make "$d" "make -k" make -k
	make -C "$d" clean >/dev/null 2>&1
	record make-c-strict-f1 make "$d" "make -k $strict" make -k "$strict"
	make -C "$d" clean >/dev/null 2>&1
	record make-c-stop-f1 make "$d" "make $strict" make "$strict"
	make -C "$d" clean >/dev/null 2>&1
	record gcc-fsyntax-f1 diag "$d" "gcc -fsyntax-only -Wall -Wextra -Wconversion -Isrc src/*.c" sh -c 'gcc -fsyntax-only -Wall -Wextra -Wconversion -Isrc src/*.c'
	record make-missing-target make "$d" "make -d install" make -d install
}

# ---- Java: the JDK's own sources (src.zip), compiled with javac ------------------------------
group_java() {
	have javac default-jdk-headless || { log "skip java: no javac"; return 0; }
	local d=$WORK/java zip
	for zip in /usr/lib/jvm/*17*/lib/src.zip /usr/lib/jvm/*/lib/src.zip ""; do [[ -f $zip ]] && break; done
	[[ -n "$zip" ]] || { log "skip java: no src.zip"; return 0; }
	rm -rf "$d" && mkdir -p "$d/src" "$d/out"
	(cd "$d/src" && python3 -c "
import zipfile, sys
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.startswith('java.base/java/util/') and n.count('/') == 3 and any(n.endswith(x) for x in ('Arrays.java', 'StringJoiner.java', 'BitSet.java', 'Base64.java', 'Optional.java', 'StringTokenizer.java', 'UUID.java', 'Objects.java', 'ArrayDeque.java', 'PriorityQueue.java', 'TreeMap.java', 'ArrayList.java')):
        z.extract(n)
" "$zip")
	local files
	files=$(cd "$d/src" && ls java.base/java/util/*.java | tr '\n' ' ')
	record javac-ok diag "$d/src" "javac --patch-module java.base=. -Xlint:all -d ../out java.base/java/util/*.java" sh -c "javac --patch-module java.base=. -Xlint:all -Xmaxwarns 400 -d ../out $files"
	mut "$d/src/java.base/java/util/StringJoiner.java" 2 'return this;' 'return null'
	mut "$d/src/java.base/java/util/BitSet.java" 3 'int ' 'integer '
	mut "$d/src/java.base/java/util/UUID.java" 1 'long mostSigBits' 'int mostSigBits'
	record javac-f1 diag "$d/src" "javac --patch-module java.base=. -Xlint:all -d ../out java.base/java/util/*.java" sh -c "javac --patch-module java.base=. -Xlint:all -Xmaxwarns 400 -d ../out $files"
	record javac-quiet-f1 diag "$d/src" "javac --patch-module java.base=. -d ../out java.base/java/util/*.java" sh -c "javac --patch-module java.base=. -d ../out $files"
}

# ---- Rust: a crate written here (crates.io is not reachable), cargo build and cargo test ------
group_rust() {
	have cargo cargo || { log "skip rust: no cargo"; return 0; }
	local d=$WORK/rust/ledger
	rm -rf "$d" && mkdir -p "$d/src"
	printf '[package]\nname = "ledger"\nversion = "0.1.0"\nedition = "2021"\n' >"$d/Cargo.toml"
	python3 - "$d/src/lib.rs" <<'PY'
import sys
out = ["//! Money arithmetic in cents.\n",
       "pub fn split(total: i64, parts: i64) -> Vec<i64> {\n    let base = total / parts;\n    let rest = total % parts;\n    (0..parts).map(|i| base + if i < rest { 1 } else { 0 }).collect()\n}\n",
       "pub fn parse_cents(s: &str) -> Option<i64> {\n    let (a, b) = s.split_once('.').unwrap_or((s, \"0\"));\n    let b = format!(\"{:0<2}\", b);\n    Some(a.parse::<i64>().ok()? * 100 + b[..2].parse::<i64>().ok()?)\n}\n",
       "pub fn rate(amount: i64, bp: i64) -> i64 {\n    (amount * bp + 5000) / 10000\n}\n",
       "#[cfg(test)]\nmod tests {\n    use super::*;\n"]
for i in range(1, 121):
    out.append("    #[test]\n    fn split_%d() { let v = split(%d, %d); assert_eq!(v.iter().sum::<i64>(), %d); assert!(v.iter().max().unwrap() - v.iter().min().unwrap() <= 1); }\n" % (i, i * 37, i % 7 + 1, i * 37))
    out.append("    #[test]\n    fn parse_%d() { assert_eq!(parse_cents(\"%d.%02d\"), Some(%d)); }\n" % (i, i, i % 100, i * 100 + i % 100))
    out.append("    #[test]\n    fn rate_%d() { assert_eq!(rate(%d, 250), %d); }\n" % (i, i * 1000, (i * 1000 * 250 + 5000) // 10000))
out.append("}\n")
open(sys.argv[1], "w").write("".join(out))
PY
	record cargo-test-ok rusttest "$d" "cargo test -- --test-threads=1" cargo test --offline -- --test-threads=1
	record cargo-build-ok diag "$d" "cargo build" cargo build --offline
	mut "$d/src/lib.rs" 1 '\+ 5000' '+ 4999'
	mut "$d/src/lib.rs" 1 'let rest = total % parts;' 'let rest = if total > 4000 { total % parts + 1 } else { total % parts };'
	record cargo-test-f1 rusttest "$d" "cargo test -- --test-threads=1" cargo test --offline -- --test-threads=1
	record cargo-test-q-f1 rusttest "$d" "cargo test -q" cargo test --offline -q
	mut "$d/src/lib.rs" 1 'Some\(a\.parse' 'Some(a.parse::<i32>().ok()? * 100 + b[..2].parse::<i64>().ok()?); Some(a.parse'
	record cargo-build-f2 diag "$d" "cargo build --all-targets" cargo build --offline --all-targets
}

# ---- shell: the shell scripts of this machine, with shellcheck --------------------------------
group_shell() {
	have shellcheck shellcheck || { log "skip shell: no shellcheck"; return 0; }
	local d=$WORK/sh f i=0
	rm -rf "$d" && mkdir -p "$d"
	for f in $(grep -lsE '^#! ?/bin/(ba)?sh' /usr/bin/* /usr/sbin/* /etc/init.d/* 2>/dev/null | sort | head -60); do
		[[ $(wc -c <"$f") -lt 20000 ]] || continue
		cp "$f" "$d/$(basename "$f").sh"
	done
	chmod -R u+w "$d"
	local all
	all=$(cd "$d" && ls *.sh | head -24 | tr '\n' ' ')
	record shellcheck-ok shellcheck "$d" "shellcheck -S warning *.sh" sh -c "shellcheck -S warning $all"
	record shellcheck-all-ok shellcheck "$d" "shellcheck *.sh (first 12)" sh -c "shellcheck $(echo $all | cut -d' ' -f1-12)"
	for f in $(echo $all | cut -d' ' -f2,5,9); do
		i=$((i + 1))
		mut "$d/$f" 3 '^(\s*)if ' '${1}if [ $x = 1 ] && '
		mut "$d/$f" 1 '\bfi$' 'fi fi'
	done
	record shellcheck-f1 shellcheck "$d" "shellcheck -S warning *.sh" sh -c "shellcheck -S warning $all"
	record shellcheck-gcc-f1 diag "$d" "shellcheck -f gcc *.sh" sh -c "shellcheck -f gcc $all"
	record bash-n-f1 diag "$d" "for f in *.sh; do bash -n \$f; done" sh -c "for f in $all; do bash -n \$f; done"
}

# ---- packages: apt-get plans and errors -------------------------------------------------------
group_pkg() {
	command -v apt-get >/dev/null || { log "skip pkg: no apt-get"; return 0; }
	record apt-get-install-s-ok apt "$WORK" "apt-get install -s clang" apt-get install -s --no-install-recommends clang
	record apt-get-install-s-docs-ok apt "$WORK" "apt-get install -s texinfo" apt-get install -s texinfo
	record apt-get-missing apt "$WORK" "apt-get install -s gcc libctxkit-missing-dev python3-nosuchthing" apt-get install -s -o Debug::pkgProblemResolver=1 gcc clang libctxkit-missing-dev python3-nosuchthing
	record apt-get-conflict apt "$WORK" "apt-get install -s default-jdk-headless openjdk-17-jre-headless- " apt-get install -s -o Debug::pkgProblemResolver=1 default-jdk-headless openjdk-17-jre-headless-
	record apt-cache-policy-ok apt "$WORK" "apt-cache policy gcc make git python3 nodejs npm" apt-cache showpkg gcc
}

# ---- git: this repository's own history --------------------------------------------------------
group_git() {
	local d=$WORK/git
	rm -rf "$d" && git clone -q --no-local "$ROOT" "$d" 2>/dev/null || { log "skip git: cannot clone"; return 0; }
	local base
	base=$(git -C "$d" rev-list --max-count=1 --before=2026-11-28T12:00 HEAD 2>/dev/null || git -C "$d" rev-parse HEAD)
	git -C "$d" checkout -q "$base"
	local c i=0
	for c in $(git -C "$d" log --no-merges --format=%h -n 400 | awk 'NR % 60 == 7'); do
		i=$((i + 1))
		record "git-show-$i" gitlog "$d" "git show --stat -p $c" git show --stat -p "$c"
	done
	record git-log-p-internal-budget gitlog "$d" "git log -p -n 6 -- internal/budget/select.go" git log -p -n 3 -- internal/budget/select.go
	record git-log-p-tests gitlog "$d" "git log -p -n 8 -- '*_test.go'" git log -p -n 4 -- budget_outputs_test.go outputs_test.go
	record git-log-oneline gitlog "$d" "git log --oneline -n 900" git log --oneline -n 900
	record git-log-stat gitlog "$d" "git log --stat -n 40" git log --stat -n 40
	record git-diff-stat gitlog "$d" "git diff --stat HEAD~80" git diff --stat HEAD~80
	record git-diff-internal gitlog "$d" "git diff HEAD~30 -- internal/cli" git diff HEAD~30 -- internal/cli
	record git-blame-select git "$d" "git blame internal/budget/cut.go" git blame -s internal/budget/cut.go
	# a dirty tree: files changed, staged, removed and new
	local f
	for f in $(git -C "$d" ls-files 'internal/*.go' | awk 'NR % 9 == 1' | head -30); do echo "// touched" >>"$d/$f"; done
	git -C "$d" add $(git -C "$d" ls-files -m | head -10)
	for f in $(git -C "$d" ls-files 'man/*' | head -4); do git -C "$d" rm -q "$f"; done
	mkdir -p "$d/new" && for i in $(seq 1 40); do echo x >"$d/new/scratch-$i.txt"; done
	record git-status-dirty gitstatus "$d" "git status" git status
	record git-diff-dirty gitlog "$d" "git diff" git diff
	# a merge with conflicts
	git -C "$d" reset -q --hard && git -C "$d" clean -qfd
	git -C "$d" checkout -q -b side HEAD~20
	for f in $(git -C "$d" ls-files 'internal/budget/*.go' | head -6); do perl -pi -e 's/^(\/\/ .*)$/$1 (side)/ if $. < 30' "$d/$f"; done
	git -C "$d" -c user.name=dev -c user.email=dev@example.com commit -qam side
	git -C "$d" checkout -q "$base"
	record git-merge-conflict gitmerge "$d" "git merge side" git -c user.name=dev -c user.email=dev@example.com merge side
	record git-status-conflict gitstatus "$d" "git status" git status
}

# ---- files: listings and searches of real trees (Go modules, the JDK's sources) ---------------
group_files() {
	local d=$WORK/files
	rm -rf "$d" && mkdir -p "$d"
	local mv src short
	for mv in github.com/BurntSushi/toml@v1.6.0 gopkg.in/yaml.v3@v3.0.1 github.com/rivo/uniseg@v0.4.7 github.com/alecthomas/kong@v1.17.0 github.com/dustin/go-humanize@v1.0.1 golang.org/x/text@v0.14.0; do
		src=$(cd "$WORK" && go mod download -json "$mv" 2>/dev/null | perl -ne 'print $1 if /"Dir": "(.*)"/')
		[[ -n "$src" ]] || continue
		short=$(basename "${mv%@*}")
		cp -r "$src" "$d/$short"
	done
	chmod -R u+w "$d"
	find "$d" -exec touch -h -d '2026-11-01 12:00:00' {} +
	for short in toml yaml.v3 kong go-humanize; do
		[[ -d "$d/$short" ]] || continue
		record "ls-lR-$short" listing "$d" "ls -lR $short" ls -lR "$short"
		record "find-$short" find "$d" "find $short" find "$short"
		record "grep-rn-err-$short" grep "$d" "grep -rn err $short" grep -rn 'err' "$short"
	done
	if [[ -d "$d/text" ]]; then
		record ls-lR-text-unicode listing "$d" "ls -lR text/unicode" ls -lR text/unicode text/language
		record find-text-name listing "$d" "find text -name '*.go' -newer text/go.mod -o -type d" sh -c 'find text -type d | sort'
		record find-text-go find "$d" "find text -name '*_test.go'" find text -name '*_test.go'
		record grep-rn-todo-text grep "$d" "grep -rn TODO text" grep -rn 'TODO' text
		record grep-rl-error-text grep "$d" "grep -rl Error text" grep -rl 'Error' text
		record grep-rn-func-test grep "$d" "grep -rn 'func Test' text/language text/unicode" grep -rn 'func Test' text/language text/unicode
		record du-text listing "$d" "du -a text | sort -k2" sh -c 'du -a text | sort -k2 | head -1200'
	fi
	record grep-rn-missing-dir grep "$d" "grep -rn 'panic(' toml kong yaml.v3 nosuchdir" grep -rn 'panic(' toml kong yaml.v3 nosuchdir
	record wc-l-go listing "$d" "wc -l */*.go" sh -c 'wc -l */*.go'
	# long JSON: go list -json, npm's lock file, the module graph
	if [[ -d "$d/kong" ]]; then
		record go-list-json-kong json "$d/kong" "go list -json ." go list -json .
		record go-list-deps-json json "$d/toml" "go list -json -deps ./... | head" sh -c 'go list -json ./...'
	fi
	if [[ -f "$WORK/js/package-lock.json" || -d "$WORK/js/node_modules" ]]; then
		record npm-ls-json json "$WORK/js" "npm ls --all --json" npm ls --all --json --depth=2
		record jq-lock-packages json "$WORK/js" "jq .packages node_modules/.package-lock.json" sh -c 'jq ".packages | with_entries(select(.key | test(\"jest-[a-e]\")))" node_modules/.package-lock.json'
	fi
	record json-tool-orders json "$WORK" "python3 -m json.tool orders.json" python3 -c 'import json, random; random.seed(3); print(json.dumps([{"id": i, "sku": "sku-%04d" % i, "tags": ["a", "b"][: i % 3], "price": round(random.random() * 90, 2)} for i in range(220)], indent=2))'
	record json-error-truncated json "$WORK" "python3 -m json.tool broken.json" sh -c 'python3 -c "import json; print(json.dumps({\"items\": [{\"id\": i, \"name\": \"item %d\" % i} for i in range(300)]}, indent=2)[:-40])" > broken.json; cat broken.json; python3 -m json.tool broken.json'
}

# ---- net: curl -v against a local server -------------------------------------------------------
group_net() {
	local d=$WORK/net port=18938
	rm -rf "$d" && mkdir -p "$d/www"
	python3 -c 'import json; print(json.dumps({"releases": [{"version": "1.%d.%d" % (i // 10, i % 10), "notes": "fixes %d" % i} for i in range(200)]}, indent=1))' >"$d/www/releases.json"
	for i in $(seq 1 150); do echo "line $i of the changelog" ; done >"$d/www/CHANGES.txt"
	(cd "$d/www" && exec python3 -m http.server --bind 127.0.0.1 "$port") >"$d/server.log" 2>&1 &
	local pid=$!
	for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
	record curl-v-ok curl "$d" "curl -v http://127.0.0.1:$port/releases.json" curl -sS -v "http://127.0.0.1:$port/releases.json"
	record curl-v-404 curl "$d" "curl -v http://127.0.0.1:$port/CHANGES.txt http://127.0.0.1:$port/api/v2/releases" curl -sS -v "http://127.0.0.1:$port/CHANGES.txt" "http://127.0.0.1:$port/api/v2/releases"
	record curl-v-list curl "$d" "curl -v http://127.0.0.1:$port/ (and twice more)" curl -sS -v "http://127.0.0.1:$port/CHANGES.txt" "http://127.0.0.1:$port/CHANGES.txt" "http://127.0.0.1:$port/CHANGES.txt"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	record curl-v-refused curl "$d" "curl -v --retry 3 http://127.0.0.1:$port/releases.json" sh -c "curl -sS -v --retry 3 --retry-delay 1 --retry-connrefused http://127.0.0.1:$port/releases.json; cat www/CHANGES.txt"
}

# ---- a docker-like build: the steps of a multi-stage build run with make, one log -------------
group_build() {
	local d=$WORK/build
	rm -rf "$d" && mkdir -p "$d"
	[[ -d "$WORK/go/humanize" ]] || gocopy "$WORK/go/humanize" github.com/dustin/go-humanize@v1.0.1
	cat >"$d/build.sh" <<'SH'
#!/bin/sh
# A build in numbered steps as container builders log them: each step's command and output.
set -e
n=0; total=6
step() { n=$((n + 1)); echo "#$n [$n/$total] RUN $*"; "$@" 2>&1 | sed "s/^/#$n /"; echo "#$n DONE"; }
step go version
step go env GOOS GOARCH GOFLAGS
step go mod download -x
step go vet ./...
step go test -count=1 -v ./...
step go build -v -o /tmp/ctxkit-real/build/app .
echo "exporting to image: done"
SH
	chmod +x "$d/build.sh"
	record build-log-ok buildlog "$WORK/go/humanize" "./build.sh" sh "$d/build.sh"
	cp -r "$WORK/go/humanize" "$d/src"
	mut "$d/src/ordinals.go" 1 '"th"' '"st"'
	perl -pi -e 's/total=6/total=6; set -- x/; s/"\$@" 2>&1 \| sed/{ "\$@" 2>&1; echo "exit \$?"; } | sed/' "$d/build.sh"
	record build-log-f1 buildlog "$d/src" "./build.sh" sh "$d/build.sh"
}

# ---- more: larger runs of the tools whose first cases above are small ---------------------------
group_more() {
	local d=$WORK/more mv src short c i=0 f
	rm -rf "$d" && mkdir -p "$d"
	# git: the commits of this repository whose patch is 4-60 KB, and a tree with many changes
	git clone -q --no-local "$ROOT" "$d/repo" 2>/dev/null || { log "skip more: cannot clone"; return 0; }
	for c in $(git -C "$d/repo" log --no-merges --format=%h -n 600 | awk 'NR % 23 == 5'); do
		i=$((i + 1))
		record "git-show-p-$i" gitlog "$d/repo" "git show -p $c" git show -p "$c"
	done
	for f in internal/transcript internal/cli internal/count man scripts; do
		record "git-log-p-${f//\//-}" gitlog "$d/repo" "git log -p -n 3 -- $f" git log -p -n 3 -- "$f"
	done
	for f in $(git -C "$d/repo" ls-files 'internal/*.go' | awk 'NR % 3 == 1'); do echo "// touched" >>"$d/repo/$f"; done
	git -C "$d/repo" add $(git -C "$d/repo" ls-files -m | awk 'NR % 2 == 0')
	mkdir -p "$d/repo/tmp" && for i in $(seq 1 120); do echo x >"$d/repo/tmp/scratch-$i.txt"; done
	record git-status-many gitstatus "$d/repo" "git status -uall" git status -uall
	record git-diff-stat-many gitlog "$d/repo" "git diff --stat HEAD" git diff --stat HEAD
	# listings of the Go modules' trees and of the JDK's java.util sources
	for mv in github.com/rivo/uniseg@v0.4.7 golang.org/x/text@v0.14.0 github.com/alecthomas/kong@v1.17.0 github.com/BurntSushi/toml@v1.6.0 github.com/tidwall/gjson@v1.20.1; do
		src=$(cd "$WORK" && go mod download -json "$mv" 2>/dev/null | perl -ne 'print $1 if /"Dir": "(.*)"/')
		[[ -n "$src" ]] || continue
		short=$(basename "${mv%@*}")
		cp -r "$src" "$d/$short"
	done
	chmod -R u+w "$d"
	find "$d" -path "$d/repo" -prune -o -exec touch -h -d '2026-11-01 12:00:00' {} +
	for f in text/language text/encoding text/unicode/norm text/internal kong toml/internal uniseg; do
		[[ -e "$d/$f" ]] || continue
		record "ls-lR-${f//\//-}" listing "$d" "ls -lR $f" ls -lR "$f"
		record "find-${f//\//-}" find "$d" "find $f" find "$f"
		record "grep-rn-func-${f//\//-}" grep "$d" "grep -rn '^func ' $f" grep -rn '^func ' "$f"
	done
	record du-uniseg listing "$d" "du -ah uniseg text/encoding | sort -k2" sh -c 'du -ah uniseg text/encoding | sort -k2'
	record find-text-type-d find "$d" "find text -type d" sh -c 'find text -type d | sort'
	record grep-rn-missing-dirs grep "$d" "grep -rn 'Errorf' toml kong uniseg text/encoding nosuchdir" grep -rn 'Errorf' toml kong uniseg text/encoding nosuchdir
	# npm, loud
	if have npm npm; then
		mkdir -p "$d/npm" && printf '{"name":"more","version":"1.0.0","private":true}\n' >"$d/npm/package.json"
		record npm-install-e404-verbose npm "$d/npm" "npm install --loglevel=verbose left-pad-ctxkit-missing-zz" npm install --loglevel=verbose left-pad-ctxkit-missing-zz
		record npm-install-http-ok npm "$d/npm" "npm install --loglevel=http semver qs minimist ms chalk@4.1.2" npm install --loglevel=http semver@7.6.3 qs@6.13.0 minimist@1.2.8 ms@2.1.3 chalk@4.1.2 debug@4.3.7 commander@12.1.0 yargs@17.7.2
		record npm-ls-all npm "$d/npm" "npm ls --all" npm ls --all
		record npm-ls-all-json json "$d/npm" "npm ls --all --json" npm ls --all --json
	fi
	# javac on more of the JDK's java.util
	local zip
	for zip in /usr/lib/jvm/*17*/lib/src.zip /usr/lib/jvm/*/lib/src.zip ""; do [[ -f $zip ]] && break; done
	if [[ -n "$zip" ]] && have javac default-jdk-headless; then
		mkdir -p "$d/java/src" "$d/java/out"
		(cd "$d/java/src" && python3 -c "
import zipfile, sys
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.startswith('java.base/java/util/') and n.count('/') == 3 and n.endswith('.java') and n[20:21] in 'ABCDEFGHIJKL':
        z.extract(n)
" "$zip")
		chmod -R u+w "$d/java"
		local files
		files=$(cd "$d/java/src" && ls java.base/java/util/*.java | tr '\n' ' ')
		record javac-util-ok diag "$d/java/src" "javac --patch-module java.base=. -Xlint:all -d ../out java.base/java/util/[A-L]*.java" sh -c "javac --patch-module java.base=. -Xlint:all -Xmaxwarns 1000 -d ../out $files"
		mut "$d/java/src/java.base/java/util/BitSet.java" 3 'int ' 'integer '
		mut "$d/java/src/java.base/java/util/Base64.java" 5 'return ' 'retrun '
		mut "$d/java/src/java.base/java/util/Calendar.java" 40 ';$' ''
		record javac-util-f1 diag "$d/java/src" "javac --patch-module java.base=. -Xlint:all -d ../out java.base/java/util/[A-L]*.java" sh -c "javac --patch-module java.base=. -Xlint:all -Xmaxwarns 1000 -d ../out $files"
	fi
}

groups=(go python js lint c java rust shell pkg git files net build more)
for g in "${groups[@]}"; do
	want "$g" || continue
	log "group $g"
	"group_$g" || log "group $g failed"
done
n=$(ls "$OUT"/*.out 2>/dev/null | wc -l)
log "$n cases, $(du -sk "$OUT" | cut -f1) KB"
