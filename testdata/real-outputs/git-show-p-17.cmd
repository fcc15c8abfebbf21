git show -p 4cec840
