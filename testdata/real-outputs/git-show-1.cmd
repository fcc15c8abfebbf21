git show --stat -p c1c9484
