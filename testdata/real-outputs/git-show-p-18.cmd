git show -p e52ef75
