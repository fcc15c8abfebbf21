git log --stat -n 40
