git status -uall
