git diff HEAD~30 -- internal/cli
