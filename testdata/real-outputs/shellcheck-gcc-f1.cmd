shellcheck -f gcc *.sh
