git show -p c2bd64d
