git show -p 54c6098
