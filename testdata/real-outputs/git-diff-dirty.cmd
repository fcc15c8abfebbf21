git diff
