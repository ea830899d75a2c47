#!/bin/sh
# check_format.sh -- the formatting gate: every C source and header of the library, the tool,
# the tests, the benchmark driver and the examples must be as clang-format (.clang-format at
# the root) leaves it. Prints the differences and exits non-zero otherwise. Fix with:
#   clang-format -i $(git ls-files 'src/*.[ch]' ...)   (the same list as below)
set -eu
cd "$(dirname "$0")/.."
files=$(git ls-files 'src/*.[ch]' 'include/*.h' 'tools/*.[ch]' 'tests/*.[ch]' 'bench/*.[ch]' \
  'examples/*.[ch]')
if ! clang-format --dry-run -Werror $files; then
  echo "check_format: the files above are not formatted (clang-format -i them)" >&2
  exit 1
fi
echo "check_format: $(echo "$files" | wc -l) files formatted"
