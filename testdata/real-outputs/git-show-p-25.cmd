git show -p 2b6bf02
