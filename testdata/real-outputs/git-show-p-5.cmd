git show -p dc3320b
