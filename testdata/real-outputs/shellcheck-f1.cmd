shellcheck -S warning *.sh
