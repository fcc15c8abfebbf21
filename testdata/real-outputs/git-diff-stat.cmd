git diff --stat HEAD~80
