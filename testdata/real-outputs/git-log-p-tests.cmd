git log -p -n 8 -- '*_test.go'
