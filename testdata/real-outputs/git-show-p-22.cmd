git show -p ddd4115
