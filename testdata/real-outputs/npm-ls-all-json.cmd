npm ls --all --json
