#!/usr/bin/env bash
# A member's answer: answer.md with a non-empty "## Recommendation" section.
set -u
test -s answer.md || { echo "answer.md is missing or empty"; exit 1; }
awk '/^## Recommendation/{f=1; next} /^## /{f=0} f && NF{n++} END{exit n ? 0 : 1}' answer.md || { echo "answer.md has no non-empty '## Recommendation' section"; exit 1; }
