#!/bin/sh
# sizes.sh prints the largest Go files (lines, tests left out) and the
# types with the most methods (by package directory), the figures
# CONTRIBUTING.md's "Sizes" keeps. Methods are counted from the
# declarations' receivers, so a type's methods in every file of its
# package count. Usage: scripts/sizes.sh [N] (default 5 of each).
set -eu
n=${1:-5}
cd "$(dirname "$0")/.."
files=$(git ls-files '*.go' ':!:*_test.go')
echo "largest files (lines):"
# shellcheck disable=SC2086 # the names hold no spaces
wc -l $files | grep -v ' total$' | sort -rn | head -n "$n"
echo "types with the most methods:"
for f in $files; do
	sed -n 's/^func ([A-Za-z_][A-Za-z0-9_]* \*\{0,1\}\([A-Za-z_][A-Za-z0-9_]*\)\(\[[^]]*\]\)\{0,1\}) .*/\1/p' "$f" |
		sed "s|^|$(dirname "$f").|"
done | sort | uniq -c | sort -rn | head -n "$n"
