git log -p -n 6 -- internal/budget/select.go
