find text -name '*_test.go'
