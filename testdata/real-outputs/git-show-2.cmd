git show --stat -p 69f7ba0
