git log --stat
