git show -p 0e9cb5f
