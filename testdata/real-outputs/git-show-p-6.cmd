git show -p c9e326b
