git log -p -n 3 -- internal/count
