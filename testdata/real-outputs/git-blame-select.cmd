git blame internal/budget/cut.go
