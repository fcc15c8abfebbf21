git show -p fe0d7fa
