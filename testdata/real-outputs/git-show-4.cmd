git show --stat -p c495e6e
