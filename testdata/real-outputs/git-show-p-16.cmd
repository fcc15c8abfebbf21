git show -p 8b761a1
