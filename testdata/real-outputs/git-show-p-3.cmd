git show -p 68d68ea
