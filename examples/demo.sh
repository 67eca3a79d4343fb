#!/bin/sh
# `make demo`: the tierank command on trec_eval's own test run (tests/data/trec_eval).
#
#   1. a table of means (ties counted at their expected value, the default);
#   2. the same measures printed exactly as trec_eval prints them (--ties trec_eval --format trec);
#   3. the tie report of that run: its few ties barely move anything;
#   4. the tie report of the same run with scores rounded to one decimal: now ties decide.
#
# Usage: PYTHON=/path/to/python sh examples/demo.sh   (default: the project's .venv, else python3)
set -eu

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DATA="$ROOT/tests/data/trec_eval"
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
case "$PYTHON" in
    */*) PYTHON="$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")" ;;
esac

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cp "$DATA/qrels.test" "$DATA/results.test" "$WORK/"
cd "$WORK"
# the same run, scores rounded to one decimal: most documents now tie
awk '{ printf "%s %s %s %s %.1f rounded\n", $1, $2, $3, $4, $5 }' results.test > rounded.test

show() {
    printf '\n$ tierank %s\n' "$*"
    "$PYTHON" -m tierank "$@" --no-progress
}

show qrels.test results.test -m map P.5,10 ndcg_cut.10 recip_rank
show qrels.test results.test -m map P.5,10 ndcg_cut.10 recip_rank --ties trec_eval --format trec
show ties qrels.test results.test -m map P.5,10 ndcg_cut.10 recip_rank
show ties qrels.test rounded.test -m map P.5,10 ndcg_cut.10 recip_rank
