shellcheck *.sh (first 12)
