#!/usr/bin/env bash
# The chair's synthesis: a recommendation and a non-empty "## Unresolved disagreements" section (it may say "none").
set -u
test -s synthesis.md || { echo "synthesis.md is missing or empty"; exit 1; }
for section in Recommendation 'Unresolved disagreements'; do
  awk -v s="## $section" '$0 == s {f=1; next} /^## /{f=0} f && NF{n++} END{exit n ? 0 : 1}' synthesis.md || { echo "synthesis.md has no non-empty '## $section' section"; exit 1; }
done
