#!/usr/bin/env bash
# Migration check (templates/migration): fails, printing every match, while PATTERN (an extended regex) occurs in a
# file under PATH...; a PATH that does not exist fails too (a deleted folder is not a migrated one).
# usage: bash checks/no-match.sh PATTERN PATH...
set -uo pipefail
pattern=${1:?usage: no-match.sh PATTERN PATH...}
shift
[ $# -gt 0 ] || { echo "no-match.sh: no PATH given"; exit 1; }
for p in "$@"; do [ -e "$p" ] || { echo "no-match.sh: $p does not exist"; exit 1; }; done
grep -rnE -- "$pattern" "$@"
case $? in
  0) echo "no-match.sh: '$pattern' is still used (above)"; exit 1 ;;
  1) echo "no-match.sh: no '$pattern' left in $*" ;;
  *) echo "no-match.sh: grep failed"; exit 1 ;;
esac
