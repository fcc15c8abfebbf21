git show -p c526c0e
