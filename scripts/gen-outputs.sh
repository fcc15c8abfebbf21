#!/usr/bin/env bash
# gen-outputs.sh — real command outputs with planted failures, the measure for ctx-budget's cut
# (issue 18). Writes testdata/outputs/NAME.{out,cmd,keep}; see testdata/outputs/README.md.
#
# Every case generates a small project (Go module, Python package, C tree, Cargo crate, Java
# tree, npm project, shell scripts, git repository) with failures planted at known places,
# runs a real tool on it here and records:
#
#   NAME.out   the combined stdout+stderr as an agent's shell tool would get it (ANSI colour
#              and carriage returns kept where the tool writes them)
#   NAME.cmd   the command, one line
#   NAME.keep  the lines any cut must keep, exactly as in NAME.out once ANSI escapes and
#              trailing white space are removed. They are found with fixed strings built from
#              what was planted (test names, messages, file:line), never with a generic
#              "error" pattern; a planted string that matches no line stops the script.
#
#   scripts/gen-outputs.sh                 every case
#   scripts/gen-outputs.sh go-test pytest  only the named cases
#
# Needs: go, git, perl. Installs what a case needs when missing (apt-get: python3-pytest,
# gcc, g++, make, default-jdk-headless, shellcheck, nodejs, npm, cargo; from the npm registry:
# jest 29.7.0, and request, glob and rimraf for the npm-install case) and SKIPS a case, with a
# message on stderr, when its tool cannot be had. A case whose planted lines are not in its
# output (another version of a tool words it differently) is reported, its files removed, and
# the script exits 1 after the other cases.
#
# Determinism: the work tree is a fixed path ($OUTPUTS_WORK, default /tmp/ctxkit-outputs,
# wiped at the start) because paths show in the outputs; LC_ALL=C, TZ=UTC, fixed git dates,
# PYTHONHASHSEED=0, -count=1, one test thread for cargo, and durations ("0.123s", "(12 ms)",
# "duration_ms: 1.5", "in 0.52s") are rewritten to fixed values. A rerun gives the same
# bytes except where the tool's own order or progress frames depend on timing (npm's spinner
# under a pseudo-terminal); the .keep lines stay the same.
set -euo pipefail

export LC_ALL=C TZ=UTC LANG=C COLUMNS=80
export GOTOOLCHAIN=local GOFLAGS='' GOWORK=off CGO_ENABLED=0
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1
export RUST_BACKTRACE=0 CARGO_TERM_PROGRESS_WHEN=never
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
# colour only where a case asks for it
unset NO_COLOR FORCE_COLOR

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/testdata/outputs
WORK=${OUTPUTS_WORK:-/tmp/ctxkit-outputs}
ONLY=" $* "

rm -rf "$WORK"
mkdir -p "$WORK/.raw" "$OUT"

log() { echo "gen-outputs: $*" >&2; }
skip() { log "skip $1: $2"; }
want() { [[ "$ONLY" == "  " || "$ONLY" == *" $1 "* ]]; }

# have CMD [DEBIAN-PACKAGE]
source "$(dirname "${BASH_SOURCE[0]}")/have.sh"

# record NAME DIR CMDLINE ARGV...: run ARGV in DIR, its stdout and stderr into one file in
# the order written; CMDLINE is what NAME.cmd shows. The exit status is the point, not a stop.
record() {
	local name=$1 dir=$2 cmdline=$3
	shift 3
	(cd "$dir" && "$@") >"$WORK/.raw/$name" 2>&1 </dev/null || true
	printf '%s\n' "$cmdline" >"$OUT/$name.cmd"
}

# finish NAME [PERL-SUBSTITUTIONS]: NAME.out from the raw capture, durations and other
# run-dependent bits rewritten by the given perl code.
finish() {
	local name=$1 subst=${2:-}
	perl -pe "$subst" "$WORK/.raw/$name" >"$OUT/$name.out"
}

# plain FILE: FILE as outputs_test.go reads it, the way a terminal shows it: within a line
# only what follows the last carriage return (or cursor-to-column-1 escape) counts, ANSI escape
# sequences are removed, and so is trailing white space.
plain() {
	perl -pe 's/[ \t\r\f\x0b]+$//; s/\e\[[01]?G/\r/g; s/^.*\r//; s/\e\[[0-?]*[ -\/]*[@-~]//g; s/\e\][^\a\e]*(?:\a|\e\\)//g; s/\e[@-Z\\-_]//g; s/[ \t\r\f\x0b]+$//' "$1"
}

# keep NAME < PATTERNS: NAME.keep holds every line of the plain NAME.out that contains one of
# the fixed strings on stdin, each once, in the order of NAME.out. A pattern starting with "="
# must equal the whole line; "A && B" means a line containing both A and B. Every pattern must
# match at least one line.
keep() {
	local name=$1 p hits
	local plainf=$WORK/.raw/$name.plain nums=$WORK/.raw/$name.nums
	plain "$OUT/$name.out" >"$plainf"
	: >"$nums"
	while IFS= read -r p; do
		[[ -n "$p" ]] || continue
		if [[ "$p" == =* ]]; then
			hits=$(grep -nxF -- "${p#=}" "$plainf" || true)
		elif [[ "$p" == *" && "* ]]; then
			hits=$(grep -nF -- "${p%% && *}" "$plainf" | grep -F -- "${p#* && }" || true)
		else
			hits=$(grep -nF -- "$p" "$plainf" || true)
		fi
		[[ -n "$hits" ]] || { log "$name: planted string not in output: $p"; return 1; }
		cut -d: -f1 <<<"$hits" >>"$nums"
	done
	awk 'NR == FNR { want[$1] = 1; next } (FNR in want) && !seen[$0]++' "$nums" "$plainf" >"$OUT/$name.keep"
	log "$name: $(wc -c <"$OUT/$name.out") chars, $(wc -l <"$OUT/$name.keep") keep lines"
}

# go durations: "(0.01s)" and "\t0.012s" at the end of ok/FAIL lines.
GO_TIMES='s/\((\d+\.\d+)s\)/(0.00s)/g; s/\t\d+\.\d+s$/\t0.005s/; s/\t\d+\.\d+s(?=\n)/\t0.005s/;'

# gomod DIR MODULE: a module with no dependencies.
gomod() {
	mkdir -p "$1"
	printf 'module %s\n\ngo 1.22\n' "$2" >"$1/go.mod"
}

WORDS=(catalog cart checkout pricing tax shipping inventory billing invoice refund coupon loyalty
	search ranking review rating media upload session auth token audit report export importer
	mailer notify webhook queue scheduler codec cache config metrics health ratelimit geo currency
	address warehouse supplier)

# --- go test ./... : many packages, three failing tests ----------------------------------
case_go_test() {
	local d=$WORK/go-test m=example.com/shop i w p t
	gomod "$d" $m
	for i in "${!WORDS[@]}"; do
		w=${WORDS[$i]}
		p=$d/internal/$w
		mkdir -p "$p"
		cat >"$p/$w.go" <<EOF
// Package $w is part of the generated shop module.
package $w

// Scale multiplies x by k.
func Scale(x, k int) int { return x * k }

// Sum adds xs.
func Sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
EOF
		{
			printf 'package %s\n\nimport "testing"\n' "$w"
			for t in $(seq 1 12); do
				printf '\nfunc TestScale%02d(t *testing.T) {\n\tif got := Scale(%d, 3); got != %d {\n\t\tt.Fatalf("Scale(%d, 3) = %%d, want %d", got)\n\t}\n}\n' $t $t $((t * 3)) $t $((t * 3))
			done
		} >"$p/${w}_test.go"
		# packages without tests, as real modules have
		mkdir -p "$d/pkg/$w"
		printf '// Package %s holds shared types.\npackage %s\n\n// ID names a %s.\ntype ID string\n' "$w" "$w" "$w" >"$d/pkg/$w/types.go"
	done
	# planted 1: float truncation in pricing
	cat >>"$d/internal/pricing/pricing.go" <<'EOF'

// ParsePrice turns "19.99" into cents.
func ParsePrice(s string) int {
	var f float64
	for i, c := range s {
		if c == '.' {
			frac := 0.0
			scale := 0.1
			for _, d := range s[i+1:] {
				frac += float64(d-'0') * scale
				scale /= 10
			}
			f += frac
			break
		}
		f = f*10 + float64(c-'0')
	}
	return int(f * 100)
}
EOF
	cat >>"$d/internal/pricing/pricing_test.go" <<'EOF'

func TestParsePrice(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"1.00", 100}, {"19.99", 1999}, {"0.50", 50}} {
		if got := ParsePrice(tc.in); got != tc.want {
			t.Errorf("ParsePrice(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
EOF
	# planted 2: a golden comparison that logs every line it checks
	cat >>"$d/internal/codec/codec.go" <<'EOF'

// Encode renders record i of the golden file.
func Encode(i int) string {
	qty := i % 7
	if i == 137 {
		qty = 8 // off by one in the rounding of bundle 137
	}
	return "sku-" + itoa(i) + ";qty=" + itoa(qty) + ";unit=EUR"
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
EOF
	cat >>"$d/internal/codec/codec_test.go" <<'EOF'

func TestGoldenRecords(t *testing.T) {
	bad := 0
	for i := 1; i <= 240; i++ {
		want := "sku-" + itoa(i) + ";qty=" + itoa(i%7) + ";unit=EUR"
		got := Encode(i)
		t.Logf("record %3d: %s", i, got)
		if got != want {
			t.Errorf("record %d differs:\n-want %s\n+got  %s", i, want, got)
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of 240 golden records differ", bad)
	}
}
EOF
	# planted 3: eviction order in cache
	cat >>"$d/internal/cache/cache.go" <<'EOF'

// Evict returns keys in the order an LRU of size n drops them.
func Evict(keys []string, n int) []string {
	var out []string
	if len(keys) > n {
		out = append(out, keys[len(keys)-n:]...) // should be the oldest, keys[:len(keys)-n]
	}
	return out
}
EOF
	cat >>"$d/internal/cache/cache_test.go" <<'EOF'

func TestEvictOrder(t *testing.T) {
	got := Evict([]string{"a", "b", "c", "d", "e"}, 3)
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("Evict(a..e, 3) = %v, want [a b]", got)
	}
}
EOF
	record go-test "$d" 'go test -count=1 ./...' go test -count=1 ./...
	finish go-test "$GO_TIMES"
	keep go-test <<EOF
--- FAIL: TestParsePrice
ParsePrice("19.99") = 
--- FAIL: TestGoldenRecords
record 137 differs:
-want sku-137;qty=4;unit=EUR
+got  sku-137;qty=8;unit=EUR
of 240 golden records differ
--- FAIL: TestEvictOrder
Evict(a..e, 3) = 
=FAIL	$m/internal/pricing	0.005s
=FAIL	$m/internal/codec	0.005s
=FAIL	$m/internal/cache	0.005s
=FAIL
EOF
}

# --- go test -v: one package, 2,000 subtests, three failing in the middle ----------------
case_go_test_v() {
	local d=$WORK/go-test-v m=example.com/rules
	gomod "$d" $m
	cat >"$d/rules.go" <<'EOF'
// Package rules computes volume discounts.
package rules

// Discount is the percentage off for qty items: 5% from 300, 10% from 700, 15% from 1000,
// 20% from 1400.
func Discount(qty int) int {
	switch {
	case qty > 1400: // bug: should be >=
		return 20
	case qty > 1000: // bug: should be >=
		return 15
	case qty > 700: // bug: should be >=
		return 10
	case qty >= 300:
		return 5
	}
	return 0
}
EOF
	cat >"$d/rules_test.go" <<'EOF'
package rules

import (
	"fmt"
	"testing"
)

func want(qty int) int {
	for _, s := range []struct{ from, pct int }{{1400, 20}, {1000, 15}, {700, 10}, {300, 5}} {
		if qty >= s.from {
			return s.pct
		}
	}
	return 0
}

func TestDiscount(t *testing.T) {
	for qty := 1; qty <= 2000; qty++ {
		t.Run(fmt.Sprintf("qty_%04d", qty), func(t *testing.T) {
			got := Discount(qty)
			t.Logf("qty=%d discount=%d%%", qty, got)
			if got != want(qty) {
				t.Errorf("Discount(%d) = %d, want %d", qty, got, want(qty))
			}
		})
	}
}

func TestZero(t *testing.T) {
	if Discount(0) != 0 {
		t.Fatal("Discount(0) != 0")
	}
}
EOF
	record go-test-v "$d" 'go test -count=1 -v ./...' go test -count=1 -v ./...
	finish go-test-v "$GO_TIMES"
	keep go-test-v <<EOF
--- FAIL: TestDiscount/qty_0700
Discount(700) = 5, want 10
--- FAIL: TestDiscount/qty_1000
Discount(1000) = 10, want 15
--- FAIL: TestDiscount/qty_1400
Discount(1400) = 15, want 20
--- FAIL: TestDiscount (
=FAIL
=FAIL	$m	0.005s
EOF
}

# --- go test -v ./...: a panic in a test -------------------------------------------------
case_go_test_panic() {
	local d=$WORK/go-test-panic m=example.com/bank w t line
	gomod "$d" $m
	for w in account fx ledger report statement; do
		mkdir -p "$d/$w"
		printf '// Package %s is part of the generated bank module.\npackage %s\n\n// Round rounds cents to the nearest multiple of k.\nfunc Round(c, k int) int { return (c + k/2) / k * k }\n' $w $w >"$d/$w/$w.go"
		{
			printf 'package %s\n\nimport "testing"\n' $w
			for t in $(seq 1 70); do
				printf '\nfunc TestRound%03d(t *testing.T) {\n\tif got := Round(%d, 5); got != %d {\n\t\tt.Fatalf("Round = %%d", got)\n\t}\n}\n' $t $t $(((t + 2) / 5 * 5))
			done
		} >"$d/$w/${w}_test.go"
	done
	cat >>"$d/ledger/ledger.go" <<'EOF'

// Entry moves cents between accounts by index.
type Entry struct{ From, To, Cents int }

// Balances applies entries to n accounts.
func Balances(n int, entries []Entry) []int {
	b := make([]int, n)
	applyAll(b, entries)
	return b
}

func applyAll(b []int, entries []Entry) {
	for _, e := range entries {
		apply(b, e)
	}
}

func apply(b []int, e Entry) {
	b[e.From] -= e.Cents
	b[e.To] += e.Cents // PLANTED: no bounds check on To
}
EOF
	sed -i 's/^func TestRound040(/func TestBalances(t *testing.T) {\n\tgot := Balances(3, []Entry{{0, 1, 500}, {1, 2, 200}, {2, 3, 100}})\n\tt.Logf("balances %v", got)\n}\n\nfunc TestRound040(/' "$d/ledger/ledger_test.go"
	line=$(grep -n 'PLANTED' "$d/ledger/ledger.go" | cut -d: -f1)
	record go-test-panic "$d" 'go test -count=1 -v ./...' go test -count=1 -v ./...
	# heap addresses in the frames' arguments and the goroutine id change from run to run
	finish go-test-panic "$GO_TIMES"' s/\b0x[0-9a-f]{9,}\b/0xc000010000/g; s/^goroutine \d+ \[running\]/goroutine 35 [running]/;'
	keep go-test-panic <<EOF
--- FAIL: TestBalances
panic: runtime error: index out of range [3] with length 3
=	$d/ledger/ledger.go:$line
=FAIL	$m/ledger	0.005s
=FAIL
EOF
}

# --- pytest: a package with many passing tests, three failures --------------------------
# make_pyproject DIR: src/shop with a deep call chain, tests/ with ~1,500 tests.
make_pyproject() {
	local d=$1 w i
	mkdir -p "$d/src/shop" "$d/tests"
	: >"$d/src/shop/__init__.py"
	cat >"$d/src/shop/money.py" <<'EOF'
"""Amounts of money as integer cents."""


def _split(text):
    whole, _, frac = text.partition(".")
    if "," in whole:
        raise ValueError(f"invalid amount {text!r}: use a dot as decimal separator")
    return int(whole), int((frac + "00")[:2])


def parse_amount(text):
    whole, frac = _split(text.strip())
    return whole * 100 + frac
EOF
	cat >"$d/src/shop/orders.py" <<'EOF'
"""Order import."""
from shop.money import parse_amount


def _parse_row(row):
    sku, qty, price = row.split(";")
    return {"sku": sku, "qty": int(qty), "cents": parse_amount(price)}


def _parse_rows(lines):
    for n, line in enumerate(lines, 1):
        print(f"import: row {n}: {line}")
        yield _parse_row(line)


def import_batch(lines):
    return list(_parse_rows(lines))
EOF
	cat >"$d/src/shop/tax.py" <<'EOF'
"""VAT rates."""
RATES = {"DE": 0.16, "FR": 0.20, "NL": 0.21, "AT": 0.20, "BE": 0.21}


def rate(country):
    return RATES[country]


def quote(net_cents, country):
    tax = round(net_cents * rate(country))
    return {"net": net_cents, "tax": tax, "gross": net_cents + tax, "country": country, "currency": "EUR"}
EOF
	cat >"$d/conftest.py" <<'EOF'
import sys, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).parent / "src"))
EOF
	for w in "${WORDS[@]}"; do
		cat >"$d/tests/test_$w.py" <<EOF
import pytest

from shop.money import parse_amount


@pytest.mark.parametrize("cents", range(40))
def test_${w}_amount(cents):
    assert parse_amount(f"{cents // 100}.{cents % 100:02d}") == cents
EOF
	done
	cat >>"$d/tests/test_tax.py" <<'EOF'

from shop.tax import quote, rate


@pytest.mark.parametrize("country,want", [("FR", 0.20), ("DE", 0.19), ("NL", 0.21)])
def test_rate(country, want):
    assert rate(country) == want


def test_quote_totals():
    assert quote(10000, "DE") == {"net": 10000, "tax": 1900, "gross": 11900, "country": "DE", "currency": "EUR"}
EOF
	cat >>"$d/tests/test_importer.py" <<'EOF'

from shop.orders import import_batch


def test_import_batch():
    lines = [f"sku-{i};{i % 5 + 1};{i}.{i % 100:02d}" for i in range(1, 120)]
    lines[97] = "sku-98;3;12,50"
    orders = import_batch(lines)
    assert len(orders) == 119
EOF
}

PYTEST_TIMES='s/ in \d+\.\d+s(?: \(\d+:\d+:\d+\))?/ in 0.42s/;'

pytest_keep() {
	local name=$1
	shift
	{
		printf '%s\n' "$@"
		cat <<'EOF'
 test_import_batch ___
 test_rate[DE-0.19] ___
 test_quote_totals ___
ValueError: invalid amount '12,50'
=src/shop/money.py:7: ValueError
AssertionError: assert 0.16 == 0.19
E       AssertionError: assert {'country': 
{'gross': 11600} != {'gross': 11900}
{'tax': 1600} != {'tax': 1900}
=tests/test_tax.py:15: AssertionError
=tests/test_tax.py:19: AssertionError
FAILED tests/test_importer.py::test_import_batch
FAILED tests/test_tax.py::test_quote_totals
FAILED tests/test_tax.py::test_rate[DE-0.19]
3 failed, 1642 passed in 0.42s
EOF
	} | keep "$name"
}

case_pytest() {
	have_pytest || { skip pytest "python3-pytest not available"; return; }
	make_pyproject "$WORK/pytest"
	record pytest "$WORK/pytest" 'python3 -m pytest -p no:cacheprovider --color=yes' /usr/bin/python3 -m pytest -p no:cacheprovider --color=yes
	finish pytest "$PYTEST_TIMES"
	pytest_keep pytest
}

case_pytest_v() {
	have_pytest || { skip pytest-v "python3-pytest not available"; return; }
	make_pyproject "$WORK/pytest-v"
	record pytest-v "$WORK/pytest-v" 'python3 -m pytest -p no:cacheprovider -v --color=no' /usr/bin/python3 -m pytest -p no:cacheprovider -v --color=no
	finish pytest-v "$PYTEST_TIMES"
	pytest_keep pytest-v '::test_import_batch FAILED' '::test_rate[DE-0.19] FAILED' '::test_quote_totals FAILED'
}

have_pytest() {
	/usr/bin/python3 -c 'import pytest' 2>/dev/null && return 0
	have pytest-3 python3-pytest >/dev/null && /usr/bin/python3 -c 'import pytest' 2>/dev/null
}

# --- a Python script raising from deep inside, with a chained exception -----------------
case_python_traceback() {
	local d=$WORK/python-traceback
	local py=/usr/bin/python3
	if [[ ! -x $py ]]; then
		have python3 python3 || { skip python-traceback "python3 not available"; return; }
		py=python3
	fi
	mkdir -p "$d/reconcile" "$d/data"
	: >"$d/reconcile/__init__.py"
	cat >"$d/reconcile/errors.py" <<'EOF'
class ReconcileError(Exception):
    """A ledger row that cannot be reconciled."""
EOF
	cat >"$d/reconcile/fx.py" <<'EOF'
RATES = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17, "CHF": 1.04, "SEK": 0.088}


def to_eur(cents, currency):
    rate = RATES[currency]
    return round(cents * rate)
EOF
	cat >"$d/reconcile/engine.py" <<'EOF'
import logging

from reconcile import fx
from reconcile.errors import ReconcileError

log = logging.getLogger("reconcile.engine")


class Reconciler:
    def __init__(self):
        self.balances = {}

    def _convert(self, row):
        return fx.to_eur(row["cents"], row["currency"])

    def _apply(self, row):
        eur = self._convert(row)
        self.balances[row["account"]] = self.balances.get(row["account"], 0) + eur
        return eur

    def process(self, n, row):
        try:
            eur = self._apply(row)
        except KeyError as e:
            raise ReconcileError(f"row {n}: unknown currency {row['currency']!r}") from e
        log.info("row %d: account %s %+d cents -> %+d EUR cents, balance %d", n, row["account"],
                 row["cents"], eur, self.balances[row["account"]])


def reconcile_file(path):
    r = Reconciler()
    with open(path) as f:
        for n, line in enumerate(f, 1):
            account, cents, currency = line.strip().split(",")
            if int(cents) < 0:
                log.warning("row %d: account %s: negative amount %s, booked as refund", n, account, cents)
            r.process(n, {"account": account, "cents": int(cents), "currency": currency})
    return r.balances
EOF
	cat >"$d/reconcile_ledger.py" <<'EOF'
import logging
import sys

from reconcile.engine import reconcile_file


def run(paths):
    for p in paths:
        logging.getLogger("reconcile").info("reading %s", p)
        balances = reconcile_file(p)
        print(f"{p}: {len(balances)} accounts")


def main():
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run(sys.argv[1:])


if __name__ == "__main__":
    main()
EOF
	"$py" - "$d/data/ledger-2026-10.csv" <<'EOF'
import random, sys
rng = random.Random(18)
cur = ["EUR", "USD", "GBP", "CHF", "SEK"]
with open(sys.argv[1], "w") as f:
    for n in range(1, 1601):
        c = "XAF" if n == 1187 else rng.choice(cur)
        f.write(f"ACC-{rng.randint(1000, 1999)},{rng.randint(-5000, 90000)},{c}\n")
EOF
	record python-traceback "$d" 'python3 reconcile_ledger.py data/ledger-2026-10.csv' "$py" reconcile_ledger.py data/ledger-2026-10.csv
	finish python-traceback
	keep python-traceback <<EOF
=  File "$d/reconcile/fx.py", line 5, in to_eur
=KeyError: 'XAF'
=  File "$d/reconcile/engine.py", line 25, in process
=reconcile.errors.ReconcileError: row 1187: unknown currency 'XAF'
EOF
}

# --- C: make with hundreds of warnings and two errors -----------------------------------
case_gcc_make() {
	local d=$WORK/gcc-make i f w
	have gcc gcc && have make make || { skip gcc-make "gcc or make not available"; return; }
	mkdir -p "$d/src" "$d/include"
	cat >"$d/include/conn.h" <<'EOF'
#ifndef CONN_H
#define CONN_H
#include <stddef.h>
struct conn {
	int fd;
	int retries;
	unsigned flags;
};
int conn_check(struct conn *c, int mode);
#endif
EOF
	cat >"$d/Makefile" <<'EOF'
CC = gcc
CFLAGS = -Wall -Wextra -O0 -Iinclude
SRC = $(sort $(wildcard src/*.c))
OBJ = $(SRC:src/%.c=build/%.o)

build/app: $(OBJ)
	$(CC) -o $@ $(OBJ)

build/%.o: src/%.c include/conn.h
	@mkdir -p build
	$(CC) $(CFLAGS) -c $< -o $@
EOF
	i=0
	for w in "${WORDS[@]}" "${WORDS[@]/%/_io}"; do
		i=$((i + 1))
		f=$d/src/$w.c
		cat >"$f" <<EOF
#include <stdio.h>
#include <string.h>
#include "conn.h"

static int ${w}_unused_helper(int x) { return x * 2; }

int ${w}_scan(struct conn *c, int mode, const char *name)
{
	int count = 0;
	int scratch;
	size_t n = strlen(name);
	for (int i = 0; i < n; i++) {
		if (name[i] == '/')
			count++;
	}
	switch (mode) {
	case 0:
		count++;
	case 1:
		count += 2;
		break;
	default:
		break;
	}
	if (c->retries < c->flags)
		printf("%s: %d retries\n", name, c->retries);
	printf("%d\n", (long)count);
	return count;
}

int ${w}_step(struct conn *c, int mode, int unused_flag)
{
	int status;
	if (mode > 3)
		status = conn_check(c, mode);
	return status;
}
EOF
	done
	# planted errors: a member that is not in struct conn, and an undeclared identifier
	sed -i 's/^\tint status;$/\tint status;\n\tc->timeout_ms = 250;/' "$d/src/session.c"
	sed -i 's/^\treturn count;$/\treturn count + max_batch;/' "$d/src/webhook_io.c"
	local l1 l2
	l1=$(grep -n 'timeout_ms' "$d/src/session.c" | cut -d: -f1)
	l2=$(grep -n 'max_batch' "$d/src/webhook_io.c" | cut -d: -f1)
	printf '#include "conn.h"\nint conn_check(struct conn *c, int mode) { return c->fd + mode; }\nint main(void) { return 0; }\n' >"$d/src/main.c"
	record gcc-make "$d" 'make -k' make -k
	finish gcc-make
	keep gcc-make <<EOF
src/session.c:$l1: && error: 'struct conn' has no member named 'timeout_ms'
src/webhook_io.c:$l2: && error: 'max_batch' undeclared
make: *** [Makefile:
make: Target 'build/app' not remade because of errors.
EOF
}

# --- Rust: cargo build with warnings and one error; cargo test with failures ------------
have_cargo() { have cargo cargo; }

CARGO_TIMES='s/ in \d+(\.\d+)?m?s\b/ in 1.00s/; s/finished in \d+\.\d+s/finished in 0.05s/;'

case_cargo_build() {
	local d=$WORK/cargo-build i w line
	have_cargo || { skip cargo-build "cargo not available"; return; }
	mkdir -p "$d/src"
	printf '[package]\nname = "ledger"\nversion = "0.4.2"\nedition = "2021"\n\n[dependencies]\n' >"$d/Cargo.toml"
	: >"$d/src/main.rs"
	for w in "${WORDS[@]}"; do
		echo "mod $w;" >>"$d/src/main.rs"
		cat >"$d/src/$w.rs" <<EOF
use std::collections::HashMap;
use std::fmt::Write;

pub struct ${w^}Entry {
    pub id: u32,
    pub cents: i64,
    label: String,
}

fn ${w}_unused_helper(x: i64) -> i64 {
    x * 2
}

pub fn ${w}_total(entries: &[${w^}Entry]) -> i64 {
    let mut count = 0;
    let scratch = entries.len();
    let mut sum = 0;
    for e in entries {
        sum += e.cents;
    }
    sum
}
EOF
	done
	cat >>"$d/src/main.rs" <<'EOF'

fn main() {
    let entries: Vec<pricing::PricingEntry> = Vec::new();
    let total: u32 = pricing::pricing_total(&entries);
    println!("total {}", total);
}
EOF
	line=$(grep -n 'let total: u32' "$d/src/main.rs" | cut -d: -f1)
	record cargo-build "$d" 'cargo build --offline --color always' cargo build --offline --color always
	finish cargo-build "$CARGO_TIMES"
	keep cargo-build <<EOF
error[E0308]: mismatched types
=  --> src/main.rs:$line:22
expected \`u32\`, found \`i64\`
error: could not compile \`ledger\` (bin "ledger") due to 1 previous error
EOF
}

case_cargo_test() {
	local d=$WORK/cargo-test i
	have_cargo || { skip cargo-test "cargo not available"; return; }
	mkdir -p "$d/src"
	printf '[package]\nname = "tally"\nversion = "0.9.0"\nedition = "2021"\n\n[dependencies]\n' >"$d/Cargo.toml"
	cat >"$d/src/lib.rs" <<'EOF'
//! Rounding of cents to the nearest nickel, the way the tills do it.

pub fn round_nickel(cents: i64) -> i64 {
    let r = cents % 5;
    if r > 2 { // bug: 2.5 rounds up, so r >= 3 is right for positives only
        cents - r + 5
    } else {
        cents - r
    }
}

pub fn split(total: i64, ways: i64) -> Vec<i64> {
    let share = total / ways;
    let mut v = vec![share; ways as usize];
    v[0] += total - share * (ways - 1); // bug: should add the remainder, not the rest
    v
}

#[cfg(test)]
mod tests {
    use super::*;
EOF
	for i in $(seq 0 1199); do
		printf '\n    #[test]\n    fn round_%04d() {\n        assert_eq!(round_nickel(%d) %% 5, 0);\n    }\n' $i $i >>"$d/src/lib.rs"
	done
	cat >>"$d/src/lib.rs" <<'EOF'

    #[test]
    fn round_negative() {
        assert_eq!(round_nickel(-3), -5, "round_nickel(-3)");
    }

    #[test]
    fn split_sums_to_total() {
        let v = split(100, 3);
        assert_eq!(v.iter().sum::<i64>(), 100, "split(100, 3) = {:?}", v);
    }

    #[test]
    fn split_rejects_zero_ways() {
        let r = std::panic::catch_unwind(|| split(10, 0));
        if r.is_ok() {
            panic!("split(10, 0) returned instead of panicking");
        }
        panic!("split(10, 0): expected a Result, got a panic: {}", "attempt to divide by zero");
    }
}
EOF
	record cargo-test "$d" 'RUST_TEST_THREADS=1 cargo test --offline' env RUST_TEST_THREADS=1 cargo test --offline
	# the thread ids in "thread 'x' (16874) panicked" change from run to run
	finish cargo-test "$CARGO_TIMES"' s/^(thread .*?) \(\d+\) panicked/$1 (2) panicked/;'

	keep cargo-test <<'EOF'
=test tests::round_negative ... FAILED
=test tests::split_rejects_zero_ways ... FAILED
=test tests::split_sums_to_total ... FAILED
=---- tests::round_negative stdout ----
=---- tests::split_rejects_zero_ways stdout ----
=---- tests::split_sums_to_total stdout ----
thread 'tests::round_negative' && panicked at src/lib.rs:
assertion `left == right` failed: round_nickel(-3)
thread 'tests::split_sums_to_total' && panicked at src/lib.rs:
assertion `left == right` failed: split(100, 3) = 
thread 'tests::split_rejects_zero_ways' && panicked at src/lib.rs:
=attempt to divide by zero
split(10, 0): expected a Result, got a panic
test result: FAILED. 1200 passed; 3 failed;
error: test failed, to rerun pass `--lib`
EOF
}

# --- Java: javac -Xlint:all on a tree with hundreds of warnings and two errors ------------
have_javac() { have javac default-jdk-headless && have java default-jdk-headless; }

case_javac() {
	local d=$WORK/javac w c l1 l2
	have_javac || { skip javac "javac not available"; return; }
	mkdir -p "$d/src/com/acme/billing"
	for w in "${WORDS[@]}"; do
		for c in Service Repository Mapper; do
			cat >"$d/src/com/acme/billing/${w^}$c.java" <<EOF
package com.acme.billing;

import java.util.ArrayList;
import java.util.Date;
import java.util.List;

public class ${w^}$c implements java.io.Serializable {
    private List items = new ArrayList();

    @SuppressWarnings("unused")
    private int scratch;

    public List<String> names(Object raw) {
        List<String> out = (List<String>) raw;
        items.add(out);
        return out;
    }

    public int year(Date d) {
        return d.getYear() + 1900;
    }

    public int total(int[] cents) {
        int t = 0;
        for (int c : cents) {
            t += c;
        }
        return t;
    }
}
EOF
		done
	done
	# planted: a misspelt variable and a String passed where an int goes
	sed -i 's/^            t += c;$/            t += c;\n            totl += 1;/' "$d/src/com/acme/billing/InvoiceService.java"
	sed -i 's/^        return d.getYear() + 1900;$/        int y = d.toString();\n        return y;/' "$d/src/com/acme/billing/RefundMapper.java"
	l1=$(grep -n 'totl' "$d/src/com/acme/billing/InvoiceService.java" | cut -d: -f1)
	l2=$(grep -n 'int y = d.toString' "$d/src/com/acme/billing/RefundMapper.java" | cut -d: -f1)
	(cd "$d" && find src -name '*.java' | sort >sources.txt)
	record javac "$d" 'javac -Xlint:all -Xmaxwarns 1000 -d out @sources.txt' javac -Xlint:all -Xmaxwarns 1000 -d out @sources.txt
	finish javac
	keep javac <<EOF
=src/com/acme/billing/InvoiceService.java:$l1: error: cannot find symbol
=  symbol:   variable totl
=src/com/acme/billing/RefundMapper.java:$l2: error: incompatible types: String cannot be converted to int
=2 errors
EOF
}

# --- Java: a JUnit-style console run by a hand-written runner (no build tool) -----------
case_java_tests() {
	local d=$WORK/java-tests w
	have_javac || { skip java-tests "javac not available"; return; }
	mkdir -p "$d/src/com/acme/tests"
	cat >"$d/src/com/acme/tests/Runner.java" <<'EOF'
package com.acme.tests;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Comparator;

/** Runs every public void test* method of the classes named on the command line. */
public class Runner {
    public static void main(String[] args) throws Exception {
        int run = 0, failed = 0, errors = 0;
        for (String name : args) {
            Class<?> c = Class.forName(name);
            System.out.println("Running " + name);
            int cRun = 0, cFailed = 0, cErrors = 0;
            Method[] ms = c.getDeclaredMethods();
            Arrays.sort(ms, Comparator.comparing(Method::getName));
            for (Method m : ms) {
                if (!m.getName().startsWith("test")) continue;
                cRun++;
                Object inst = c.getDeclaredConstructor().newInstance();
                try {
                    m.invoke(inst);
                    System.out.println("  [OK] " + m.getName());
                } catch (InvocationTargetException e) {
                    Throwable t = e.getCause();
                    if (t instanceof AssertionError) {
                        cFailed++;
                        System.out.println("  [FAIL] " + m.getName());
                    } else {
                        cErrors++;
                        System.out.println("  [ERROR] " + m.getName());
                    }
                    System.out.println(name + "." + m.getName() + " -- " + t);
                    t.printStackTrace(System.out);
                }
            }
            System.out.println("Tests run: " + cRun + ", Failures: " + cFailed + ", Errors: " + cErrors + ", Skipped: 0 - in " + name);
            run += cRun; failed += cFailed; errors += cErrors;
        }
        System.out.println();
        System.out.println("Results:");
        System.out.println();
        System.out.println("Tests run: " + run + ", Failures: " + failed + ", Errors: " + errors + ", Skipped: 0");
        System.out.println(failed + errors == 0 ? "BUILD SUCCESS" : "BUILD FAILURE");
        System.exit(failed + errors == 0 ? 0 : 1);
    }
}
EOF
	cat >"$d/src/com/acme/tests/Assert.java" <<'EOF'
package com.acme.tests;

public final class Assert {
    public static void assertEquals(String what, long want, long got) {
        if (want != got) throw new AssertionError(what + " expected:<" + want + "> but was:<" + got + ">");
    }
}
EOF
	cat >"$d/src/com/acme/tests/Money.java" <<'EOF'
package com.acme.tests;

public final class Money {
    public static long cents(String s) {
        String[] p = s.split("\\.");
        return Long.parseLong(p[0]) * 100 + Long.parseLong(p[1]);
    }

    public static long percent(long cents, int pct) {
        return cents * pct / 100;
    }
}
EOF
	local classes=()
	for w in "${WORDS[@]}"; do
		classes+=("com.acme.tests.${w^}Test")
		{
			printf 'package com.acme.tests;\n\npublic class %sTest {\n' "${w^}"
			for i in $(seq 1 25); do
				printf '    public void testPercent%02d() { Assert.assertEquals("percent", %d, Money.percent(10000, %d)); }\n' $i $((i * 100)) $i
			done
			printf '}\n'
		} >"$d/src/com/acme/tests/${w^}Test.java"
	done
	# planted: a wrong expectation, a parse of "12" with no cents, a rounding expectation
	sed -i 's/^}$/    public void testCentsOfWholeAmount() { Assert.assertEquals("cents(\\"12\\")", 1200, Money.cents("12")); }\n}/' "$d/src/com/acme/tests/ImporterTest.java"
	sed -i 's/^}$/    public void testPercentRoundsHalfUp() { Assert.assertEquals("percent(199, 50)", 100, Money.percent(199, 50)); }\n}/' "$d/src/com/acme/tests/PricingTest.java"
	sed -i 's/^}$/    public void testVatOnNet() { Assert.assertEquals("vat(10000)", 1900, Money.percent(10000, 16)); }\n}/' "$d/src/com/acme/tests/TaxTest.java"
	(cd "$d" && find src -name '*.java' | sort >sources.txt && javac -d out @sources.txt) >&2 || { skip java-tests "compile failed"; return; }
	record java-tests "$d" "java -cp out com.acme.tests.Runner ${classes[*]}" java -cp out com.acme.tests.Runner "${classes[@]}"
	finish java-tests
	local lp lt
	lp=$(grep -n testPercentRoundsHalfUp "$d/src/com/acme/tests/PricingTest.java" | cut -d: -f1)
	lt=$(grep -n testVatOnNet "$d/src/com/acme/tests/TaxTest.java" | cut -d: -f1)
	keep java-tests <<EOF
=  [ERROR] testCentsOfWholeAmount
java.lang.ArrayIndexOutOfBoundsException: Index 1 out of bounds for length 1
=	at com.acme.tests.Money.cents(Money.java:6)
=  [FAIL] testPercentRoundsHalfUp
java.lang.AssertionError: percent(199, 50) expected:<100> but was:<99>
=	at com.acme.tests.PricingTest.testPercentRoundsHalfUp(PricingTest.java:$lp)
=  [FAIL] testVatOnNet
java.lang.AssertionError: vat(10000) expected:<1900> but was:<1600>
=	at com.acme.tests.TaxTest.testVatOnNet(TaxTest.java:$lt)
Tests run: 26, Failures: 0, Errors: 1, Skipped: 0 - in com.acme.tests.ImporterTest
Tests run: 26, Failures: 1, Errors: 0, Skipped: 0 - in com.acme.tests.PricingTest
Tests run: 26, Failures: 1, Errors: 0, Skipped: 0 - in com.acme.tests.TaxTest
=Tests run: 1028, Failures: 2, Errors: 1, Skipped: 0
=BUILD FAILURE
EOF
}

# --- JS: node --test, jest, npm install -------------------------------------------------
# js_project DIR STYLE: a pricing module and ~1,000 tests in 41 files, three failing; STYLE
# is "node" (node:test) or "jest" (globals).
js_project() {
	local d=$1 style=$2 w head
	mkdir -p "$d/src" "$d/test"
	cat >"$d/src/pricing.js" <<'EOF'
'use strict';

function percent(cents, pct) {
  return Math.floor((cents * pct) / 100); // rounds down; the spec says half up
}

function parseCents(text) {
  const [whole, frac] = text.split('.');
  return Number(whole) * 100 + Number(frac.padEnd(2, '0'));
}

function vatRate(country) {
  return { DE: 0.16, FR: 0.2, NL: 0.21 }[country];
}

module.exports = { percent, parseCents, vatRate };
EOF
	if [[ $style == node ]]; then
		head="'use strict';
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { percent, parseCents, vatRate } = require('../src/pricing.js');
"
		eq() { printf "assert.equal(%s, %s, '%s')" "$1" "$2" "$3"; }
	else
		head="'use strict';
const { percent, parseCents, vatRate } = require('../src/pricing.js');
"
		eq() { printf 'expect(%s).toBe(%s)' "$1" "$2"; }
	fi
	local n=0
	for w in "${WORDS[@]}"; do
		n=$((n + 1))
		{
			printf '%s\n' "$head"
			# jest runs the biggest file first and breaks ties by its file crawl; distinct
			# sizes keep the order the same from run to run
			[[ $style == jest ]] && printf '/* %*s */\n' $((n * 200)) ''
			printf "describe('%s', () => {\n" "$w"
			for i in $(seq 1 24); do
				printf "  test('percent %d of 10000', () => {\n    %s;\n  });\n" $i "$(eq "percent(10000, $i)" $((i * 100)) "percent $i")"
			done
			case $w in
			importer) printf "  test('parses a whole amount', () => {\n    %s;\n  });\n" "$(eq 'parseCents("12")' 1200 'whole amount')" ;;
			pricing) printf "  test('rounds half up', () => {\n    %s;\n  });\n" "$(eq 'percent(199, 50)' 100 'half up')" ;;
			tax) printf "  test('charges German VAT', () => {\n    %s;\n  });\n" "$(eq "vatRate('DE')" 0.19 'DE rate')" ;;
			esac
			printf '});\n'
		} >"$d/test/$w.test.js"
	done
	unset -f eq
}

case_node_test() {
	local d=$WORK/node-test
	have node nodejs || { skip node-test "node not available"; return; }
	js_project "$d" node
	record node-test "$d" 'node --test --test-concurrency=1' node --test --test-concurrency=1
	finish node-test 's/duration_ms: \d+(\.\d+)?/duration_ms: 1.5/; s/^# duration_ms \d+(\.\d+)?/# duration_ms 900/;'
	local li lp lt
	li=$(grep -n 'parses a whole amount' "$d/test/importer.test.js" | cut -d: -f1)
	lp=$(grep -n 'rounds half up' "$d/test/pricing.test.js" | cut -d: -f1)
	lt=$(grep -n 'charges German VAT' "$d/test/tax.test.js" | cut -d: -f1)
	keep node-test <<EOF
=    not ok 25 - parses a whole amount
=      location: '$d/test/importer.test.js:$li:3'
=      error: "Cannot read properties of undefined (reading 'padEnd')"
=        parseCents ($d/src/pricing.js:9:44)
=    not ok 25 - rounds half up
=      location: '$d/test/pricing.test.js:$lp:3'
=        99 !== 100
TestContext.<anonymous> ($d/test/pricing.test.js:$((lp + 1)):
=    not ok 25 - charges German VAT
=      location: '$d/test/tax.test.js:$lt:3'
=        0.16 !== 0.19
TestContext.<anonymous> ($d/test/tax.test.js:$((lt + 1)):
=# pass 984
=# fail 3
EOF
}

# npm install of real registry packages plus a local native addon whose node-gyp build
# fails, under a pseudo-terminal (when script(1) is there) so npm draws its spinner and colours.
case_npm_install() {
	local d=$WORK/npm-install cmd
	have npm npm || { skip npm-install "npm not available"; return; }
	have g++ g++ && have make make || { skip npm-install "g++ or make not available for node-gyp"; return; }
	[[ -e /usr/include/node/node_api.h ]] || { skip npm-install "node headers (/usr/include/node) not available"; return; }
	mkdir -p "$d/vendor/fastcrc/src"
	echo '{"name":"checkout-service","version":"1.0.0","private":true}' >"$d/package.json"
	echo '{"name":"fastcrc","version":"0.3.1","main":"index.js","gypfile":true}' >"$d/vendor/fastcrc/package.json"
	echo '{"targets":[{"target_name":"fastcrc","sources":["src/crc.cc","src/crc_table.cc","src/crc_simd.cc"]}]}' >"$d/vendor/fastcrc/binding.gyp"
	printf '#include <node_api.h>\nint crc(int x) { return x; }\n' >"$d/vendor/fastcrc/src/crc.cc"
	printf 'int crc_table(int x) { return x * 2; }\n' >"$d/vendor/fastcrc/src/crc_table.cc"
	# planted: a header that only exists on ARM
	printf '#include <arm_neon.h>\nint crc_simd(int x) { return x; }\n' >"$d/vendor/fastcrc/src/crc_simd.cc"
	printf 'fund=false\naudit=false\nupdate-notifier=false\ncache=%s\n' "$d/.npm-cache" >"$d/.npmrc-user"
	cmd="npm install --loglevel=http --nodedir=/usr request@2.88.2 glob@7.2.3 rimraf@3.0.2 ./vendor/fastcrc"
	if command -v script >/dev/null 2>&1; then
		record npm-install "$d" "$cmd" env NPM_CONFIG_USERCONFIG="$d/.npmrc-user" script -qec "$cmd" /dev/null
	else
		record npm-install "$d" "$cmd" env NPM_CONFIG_USERCONFIG="$d/.npmrc-user" $cmd
	fi
	finish npm-install 's/ \d+ms \(cache/ 12ms (cache/g; s/\d{4}-\d\d-\d\dT\d\d_\d\d_\d\d_\d{3}Z/2026-01-01T00_00_00_000Z/g;'
	keep npm-install <<EOF
=npm error path $d/vendor/fastcrc
=npm error command sh -c node-gyp rebuild
=npm error ../src/crc_simd.cc:1:10: fatal error: arm_neon.h: No such file or directory
crc_simd.o] Error 1
npm error gyp ERR! stack Error: \`make\` failed with exit code: 2
EOF
}

case_jest() {
	local d=$WORK/jest
	have npm npm || { skip jest "npm not available"; return; }
	js_project "$d" jest
	echo '{"name":"pricing","version":"1.0.0","private":true,"scripts":{"test":"jest"}}' >"$d/package.json"
	(cd "$d" && npm install --no-audit --no-fund --loglevel=error jest@29.7.0 >/dev/null 2>&1) || { skip jest "npm install jest failed"; return; }
	# in band and with its own cache, so the order of the files does not depend on earlier runs
	record jest "$d" 'npx jest --verbose --ci --runInBand --cacheDirectory .jest-cache' npx jest --verbose --ci --runInBand --cacheDirectory .jest-cache
	# a test's "(3 ms)" shows only when it took long enough: dropped, so reruns match
	finish jest 's/ \(\d+(\.\d+)? m?s\)$//; s/^Time:.*/Time:        1.5 s/;'
	local li lp lt
	li=$(grep -n 'parses a whole amount' "$d/test/importer.test.js" | cut -d: -f1)
	lp=$(grep -n 'rounds half up' "$d/test/pricing.test.js" | cut -d: -f1)
	lt=$(grep -n 'charges German VAT' "$d/test/tax.test.js" | cut -d: -f1)
	keep jest <<EOF
✕ parses a whole amount
✕ rounds half up
✕ charges German VAT
=  ● importer › parses a whole amount
=    TypeError: Cannot read properties of undefined (reading 'padEnd')
=      at padEnd (src/pricing.js:9:44)
=      at Object.parseCents (test/importer.test.js:$((li + 1)):12)
=FAIL test/importer.test.js
=FAIL test/pricing.test.js
=FAIL test/tax.test.js
=  ● pricing › rounds half up
=  ● tax › charges German VAT
=    Expected: 100
=    Received: 99
=    Expected: 0.19
=    Received: 0.16
=      at Object.toBe (test/pricing.test.js:$((lp + 1)):30)
=      at Object.toBe (test/tax.test.js:$((lt + 1)):27)
=Test Suites: 3 failed, 38 passed, 41 total
=Tests:       3 failed, 984 passed, 987 total
EOF
}

# --- git log --stat of a repository with 3,000 commits: a control case with no failure ----
# Its .keep is what head and tail already keep: the first commit line and the last.
case_git_log() {
	local d=$WORK/git-log i w t
	mkdir -p "$d"
	git -C "$d" init -q -b main
	# fast-import with fixed names and dates, so the hashes are the same on every run
	{
		t=1700000000
		for i in $(seq 1 3000); do
			w=${WORDS[$((i % ${#WORDS[@]}))]}
			printf 'commit refs/heads/main\nmark :%d\nauthor Dev %d <dev%d@example.com> %d +0000\ncommitter CI <ci@example.com> %d +0000\n' \
				"$i" $((i % 7)) $((i % 7)) $((t + i * 3600)) $((t + i * 3600))
			local msg="$w: change $i (bump limits, tidy tests)"
			printf 'data %d\n%s\n' $((${#msg} + 1)) "$msg"
			[[ $i -gt 1 ]] && printf 'from :%d\n' $((i - 1))
			local body="// $w revision $i
package $w

const Limit = $((i * 10))
"
			printf 'M 100644 inline internal/%s/limits.go\ndata %d\n%s\n' "$w" ${#body} "$body"
			if ((i % 3 == 0)); then
				body="# $w notes, revision $i
"
				printf 'M 100644 inline docs/%s.md\ndata %d\n%s\n' "$w" ${#body} "$body"
			fi
		done
	} | git -C "$d" fast-import --quiet
	git -C "$d" reset -q --hard main
	record git-log "$d" 'git log --stat' git log --stat
	finish git-log
	local first last
	first=$(git -C "$d" rev-parse main)
	last=$(git -C "$d" rev-list --max-parents=0 main)
	keep git-log <<EOF
=commit $first
=commit $last
EOF
}

# --- shellcheck on generated scripts: many findings, a few of them errors ---------------
# More than 30 findings: .keep holds the first five (their "In FILE line N:" and message lines)
# and the planted errors; shellcheck prints no summary line.
case_shellcheck() {
	local d=$WORK/shellcheck w i
	have shellcheck shellcheck || { skip shellcheck "shellcheck not available"; return; }
	mkdir -p "$d/deploy"
	for w in "${WORDS[@]:0:20}"; do
		cat >"$d/deploy/$w.sh" <<EOF
#!/bin/bash
# deploy $w
set -e
SERVICE=$w
TARGET=\$1
for f in \$(find /etc/\$SERVICE -name '*.conf'); do
  cp \$f \$TARGET/
done
echo "deploying \$SERVICE to \$TARGET"
cd \$TARGET
if [ \$? -ne 0 ]; then exit 1; fi
EOF
	done
	# planted errors: an array expanded in a string comparison and a [ without its ]
	printf 'HOSTS=(a b c)\nif [ "$HOSTS" == "a" ]; then echo $HOSTS; fi\nrm -rf "$TARGET/"$@\n' >>"$d/deploy/pricing.sh"
	printf 'if [ -n "$TARGET" ; then echo ok; fi\n' >>"$d/deploy/session.sh"
	local scripts
	mapfile -t scripts < <(cd "$d" && printf '%s\n' deploy/*.sh)
	record shellcheck "$d" 'shellcheck deploy/*.sh' shellcheck "${scripts[@]}"
	finish shellcheck
	local firsts
	firsts=$(plain "$OUT/shellcheck.out" | awk '/^In deploy\// { h = $0 } / SC[0-9]+ \(/ && n < 5 { print "=" h; print "=" $0; n++ }')
	keep shellcheck <<EOF
$firsts
=In deploy/pricing.sh line 14:
=In deploy/session.sh line 12:
SC2068 (error)
SC2145 (error)
SC1073 (error)
SC1072 (error)
EOF
}

# --- apt-get install -s: a simulated install of a large package set (no failure) ---------
# Works from the local package lists only. Its .keep is the plan's summary line, which sits
# between the package list and the long Inst/Conf tail. What it lists depends on the
# Debian archive and on what the machine has installed, so it is not byte-stable.
case_apt_get() {
	command -v apt-get >/dev/null 2>&1 || { skip apt-get "apt-get not available"; return; }
	compgen -G '/var/lib/apt/lists/*_Packages' >/dev/null || apt-get update -q >/dev/null 2>&1 || true
	record apt-get "$WORK" 'apt-get install -s libreoffice-writer' apt-get install -s libreoffice-writer
	finish apt-get
	if ! grep -q ' newly installed, ' "$OUT/apt-get.out" || [[ $(wc -c <"$OUT/apt-get.out") -le 10000 ]]; then
		rm -f "$OUT"/apt-get.*
		skip apt-get "the package lists do not offer libreoffice-writer"
		return
	fi
	keep apt-get <<'EOF'
 newly installed, 
EOF
}

# main
FAILED=()
CASES=(go-test go-test-v go-test-panic pytest pytest-v python-traceback gcc-make cargo-build cargo-test javac java-tests node-test jest npm-install git-log shellcheck apt-get)
for c in $ONLY; do
	[[ " ${CASES[*]} " == *" $c "* ]] || { log "unknown case $c; cases: ${CASES[*]}"; exit 2; }
done
for c in "${CASES[@]}"; do
	want "$c" || continue
	if ! "case_${c//-/_}"; then
		FAILED+=("$c")
		rm -f "$OUT/$c".*
	fi
done
if ((${#FAILED[@]})); then
	log "FAILED: ${FAILED[*]}"
	exit 1
fi
