git show -p 073903d
