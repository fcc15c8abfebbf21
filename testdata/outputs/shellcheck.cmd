shellcheck deploy/*.sh
