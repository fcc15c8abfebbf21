git show -p d7a8d08
