git diff --stat HEAD
