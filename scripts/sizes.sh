#!/bin/sh
# sizes.sh prints the largest Go files (lines, tests left out) and the
# types with the most methods (package directory and type), the figures
# CONTRIBUTING.md's "Sizes" keeps. Methods are counted from their
# declarations' receivers, in every non-test file of the type's package.
# Usage: scripts/sizes.sh [N] (default 5 of each).
set -eu
n=${1:-5}
cd "$(dirname "$0")/.."
files=$(git ls-files '*.go' ':!:*_test.go')
echo "largest files (lines):"
# shellcheck disable=SC2086 # Go file names here hold no spaces
wc -l $files | grep -v ' total$' | sort -rn | head -n "$n"
echo "types with the most methods:"
# shellcheck disable=SC2086
awk '/^func \([A-Za-z_][A-Za-z0-9_]* \*?[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\) / {
	t = $3; sub(/^\*/, "", t); sub(/[\[)].*/, "", t)
	d = FILENAME; sub(/\/[^\/]*$/, "", d)
	print d "." t
}' $files | sort | uniq -c | sort -rn | head -n "$n"
