#!/usr/bin/env bash
# Mutation check (templates/test-hardening): the tests must pass on the code as it is and fail on every mutant of it.
# usage: bash checks/mutants.sh SOURCE MUTANTS -- TEST COMMAND...
#   SOURCE   the file under test; MUTANTS a file of sed expressions, one per line (# comments and blank lines skipped),
#            each applied alone to a copy of SOURCE. The copy of the tree is made in a temp folder: nothing here changes.
set -euo pipefail
src=${1:?usage: mutants.sh SOURCE MUTANTS -- TEST COMMAND...}
mutants=${2:?usage: mutants.sh SOURCE MUTANTS -- TEST COMMAND...}
shift 2
[ "${1:-}" = -- ] && shift
[ -f "$src" ] || { echo "mutants.sh: $src does not exist"; exit 1; }
[ -s "$mutants" ] || { echo "mutants.sh: $mutants is missing or empty"; exit 1; }
[ $# -gt 0 ] || { echo "mutants.sh: no test command after --"; exit 1; }

echo "== the tests on the code as it is: $*"
"$@" || { echo "mutants.sh: the tests fail on the unchanged code"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
shopt -s dotglob nullglob
for f in *; do
  case $f in
    .git | node_modules) ln -s "$PWD/$f" "$work/$f" ;;
    *) cp -a "$f" "$work/" ;;
  esac
done

total=0 survived=0
while IFS= read -r expr || [ -n "$expr" ]; do
  case $expr in '' | '#'*) continue ;; esac
  total=$((total + 1))
  cp "$src" "$work/$src"
  sed -i -e "$expr" "$work/$src"
  if cmp -s "$src" "$work/$src"; then
    echo "mutants.sh: mutant '$expr' changes nothing in $src (fix $mutants)"
    exit 1
  fi
  if (cd "$work" && "$@") >"$work/.mutant.log" 2>&1; then
    echo "SURVIVED: $expr (the tests still pass with it)"
    survived=$((survived + 1))
  else
    echo "killed:   $expr"
  fi
done <"$mutants"
cp "$src" "$work/$src"

[ "$total" -gt 0 ] || { echo "mutants.sh: $mutants holds no mutant"; exit 1; }
if [ "$survived" -gt 0 ]; then
  echo "mutants.sh: $survived of $total mutant(s) survived: add tests that fail on them"
  exit 1
fi
echo "mutants.sh: all $total mutant(s) killed"
