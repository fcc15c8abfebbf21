git show -p b6f445b
